# One image per binary, chosen with the build argument SERVICE:
#   githubkit, takeover, schenotify  ./services/<SERVICE>/cmd/<SERVICE>
#   lbctl                            ./cmd/lbctl
#
#   docker build --build-arg SERVICE=githubkit -t ghcr.io/langbot-nats/githubkit:0.1.0 .
#
# The binary is static (CGO_ENABLED=0), built with -trimpath, and embeds the
# time-zone database; the final stage is an empty image with CA certificates
# and an unprivileged user (uid 65532), like distroless "static:nonroot", so
# every base image here is pinned by version.

ARG GO_IMAGE=golang:1.26.8-bookworm

FROM ${GO_IMAGE} AS build
ARG SERVICE
WORKDIR /src
# Modules first, so source edits reuse the download layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/root/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    set -eu; \
    case "${SERVICE:-}" in \
      githubkit|takeover|schenotify) pkg="./services/${SERVICE}/cmd/${SERVICE}" ;; \
      lbctl) pkg="./cmd/lbctl" ;; \
      *) echo "build argument SERVICE must be githubkit, takeover, schenotify or lbctl" >&2; exit 2 ;; \
    esac; \
    CGO_ENABLED=0 GOOS=linux go build -trimpath -tags timetzdata -ldflags="-s -w" -o /out/app "$pkg"; \
    mkdir -p /out/etc; \
    echo "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin" > /out/etc/passwd; \
    echo "nonroot:x:65532:" > /out/etc/group

FROM scratch
ARG SERVICE
LABEL org.opencontainers.image.title="langbot-${SERVICE}" \
      org.opencontainers.image.source="https://github.com/langbot-nats/plugins"
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/etc/passwd /out/etc/group /etc/
COPY --from=build /out/app /app
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/app"]
