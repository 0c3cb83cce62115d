// ESLint flat config of the schema lint (`npm run lint:schema`): @graphql-eslint's
// schema-recommended rules on the repository's schema.graphql.
import graphql from '@graphql-eslint/eslint-plugin';

export default [
  {
    files: ['schema.graphql'],
    languageOptions: {
      parser: graphql.parser,
      parserOptions: { graphQLConfig: { schema: 'schema.graphql' } },
    },
    plugins: { '@graphql-eslint': graphql },
    rules: {
      ...graphql.configs['flat/schema-recommended'].rules,
      // Objects have ids; these types are not objects of their own: Relay's connection
      // types (the spec gives them none), a showtime's prices, an event (the seat map it
      // changes has the id), a payment (one per order: its order's id names it), the
      // session startPayment answers with, a reconciler run's report, the door's answer to a
      // scan, an entry of a revocation list (its ticketId names it), a showtime's door count
      // (its showtimeId names it), a public key (its kid names it), an order's line (its
      // order and seat name it), the sales reports (computed, named by their showtime), a
      // showtime's on-sale queue (one per showtime: its showtimeId names it), a waiting-list
      // offer (its order names it: orderId) and a waiting list's report (computed, named by
      // its showtimeId).
      '@graphql-eslint/strict-id-in-types': ['error', {
        exceptions: {
          suffixes: ['Connection', 'Edge'],
          types: ['PageInfo', 'Price', 'SeatMapEvent', 'Payment', 'PaymentSession', 'ReconcileReport',
            'CheckInResult', 'RevokedTicket', 'CheckInCount', 'TicketKey', 'GuestSession',
            'OrderLine', 'SalesReport', 'TicketTypeSales', 'ShowtimeSales', 'OnSaleQueue',
            'WaitingListOffer', 'WaitingListReport'],
        },
      }],
    },
  },
];
