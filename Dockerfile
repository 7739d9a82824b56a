# syntax=docker/dockerfile:1
#
# Herald's one image: every service runs from it with different arguments
# (`herald run router`, `herald run delivery`, …; see helm/herald).
#
#   docker build -t herald:dev .
#   docker run --rm herald:dev --help
#
# The binary is static (CGO_ENABLED=0), so the final stage is distroless
# "static": CA certificates, tzdata, /etc/passwd with nonroot (65532), no shell.

ARG GO_IMAGE=golang:1.26.8-bookworm

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
WORKDIR /src
# Modules first, in their own layer: source edits do not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download && go mod verify
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /herald ./services/herald

FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title="herald" \
      org.opencontainers.image.description="Event-driven notifications for supply-chain software, on NATS JetStream" \
      org.opencontainers.image.source="https://github.com/heraldhq/herald"
COPY --from=build /herald /herald
USER 65532:65532
# Operations: /healthz, /readyz and /metrics on 8080 (--http-listen or
# http.listen; keep it private). Public: document links on 8081 (--api-listen
# or api.listen). The defaults listen on loopback only.
EXPOSE 8080 8081
ENTRYPOINT ["/herald"]
CMD ["--help"]
