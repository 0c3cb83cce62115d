# syntax=docker/dockerfile:1

# --- build: a static binary ----------------------------------------------------
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /seatflow ./server

# --- run: distroless, non-root, CA certificates and tzdata included --------------
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /seatflow /seatflow
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/seatflow"]
CMD ["serve"]
