// The client suite is JavaScript. This file makes clients/ a module of its own so that
// the Go packages some npm packages ship in node_modules (flatted's) are not packages of
// seatflow: `go list ./...`, `go vet ./...` and the package map test never see them.
module seatflow/clients

go 1.26
