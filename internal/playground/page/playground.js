// The SeatFlow playground: GraphiQL (from ../vendor, served by the binary) on /query.
// Queries and mutations go over HTTP POST; subscriptions such as seatMap over a websocket
// (graphql-ws's graphql-transport-ws protocol) on the same path.
//
// ?query=, ?variables= and ?headers= in the page's URL open the playground with them, so a
// link can carry an example.
(function () {
  'use strict';

  var root = document.getElementById('graphiql');
  var endpoint = root.dataset.endpoint;
  var wsProtocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  var params = new URLSearchParams(location.search);

  var defaultQuery = [
    '# SeatFlow playground. Press the run button (or Ctrl-Enter) to send a query.',
    '#',
    '# Catalog reads need no token. For holds and orders, paste in the Headers tab:',
    '#   {"Authorization": "Bearer <the customer token printed by make run>"}',
    '# Subscriptions run here too, e.g.',
    '#   subscription { seatMap(showtimeId: "U2hvd3RpbWU6MQ") { kind version seats { seat { row number } status } } }',
    '# (U2hvd3RpbWU6MQ is showtime 1 of the demo data; take ids from answers, such as the one below.)',
    '',
    '{',
    '  movies(first: 5) {',
    '    edges {',
    '      node {',
    '        id',
    '        title',
    '        showtimes { id startsAt status hall { name } }',
    '      }',
    '    }',
    '  }',
    '}',
    ''
  ].join('\n');

  var fetcher = GraphiQL.createFetcher({
    url: location.origin + endpoint,
    subscriptionUrl: wsProtocol + '//' + location.host + endpoint
  });

  ReactDOM.createRoot(root).render(React.createElement(GraphiQL, {
    fetcher: fetcher,
    defaultQuery: defaultQuery,
    query: params.get('query') || undefined,
    variables: params.get('variables') || undefined,
    headers: params.get('headers') || undefined,
    isHeadersEditorEnabled: true,
    shouldPersistHeaders: true
  }));
})();
