package seatflow

// Generated code is never edited by hand: `make generate` runs these, ent first, then gqlgen.
//go:generate go tool ent generate --feature sql/execquery,sql/upsert,sql/modifier,sql/lock ./ent/schema
//go:generate go tool gqlgen generate --config gqlgen.yml
