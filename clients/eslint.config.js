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
    rules: graphql.configs['flat/schema-recommended'].rules,
  },
];
