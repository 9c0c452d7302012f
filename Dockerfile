# One image per binary, chosen with the build argument SERVICE:
#   githubkit, takeover, schenotify  ./services/<SERVICE>/cmd/<SERVICE>
#   lbctl                            ./cmd/lbctl
#
#   docker build --build-arg SERVICE=githubkit -t ghcr.io/langbot-nats/githubkit:0.1.0 .
#
# Multi-platform (amd64 and arm64 in one image index; "make images-multiarch"):
#
#   docker buildx build --platform linux/amd64,linux/arm64 --build-arg SERVICE=githubkit \
#     -t ghcr.io/langbot-nats/githubkit:0.1.0 --push .
#
# The build stage runs on the builder's own platform (BUILDPLATFORM) and
# cross-compiles for the target (TARGETOS, TARGETARCH, set by BuildKit): Go
# needs no emulation for that, and CGO is off. Only the final stage, which
# holds no executable besides the binary, is per target platform.
#
# The binary is static (CGO_ENABLED=0), built with -trimpath, and embeds the
# time-zone database; the final stage is an empty image with CA certificates
# and an unprivileged user (uid 65532), like distroless "static:nonroot", so
# every base image here is pinned by version.

ARG GO_IMAGE=golang:1.26.8-bookworm

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
ARG SERVICE
# Set by BuildKit from --platform (the builder's own platform without it).
ARG TARGETOS
ARG TARGETARCH
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
    [ -n "${TARGETOS:-}" ] && [ -n "${TARGETARCH:-}" ] || { echo "TARGETOS and TARGETARCH are unset: build with BuildKit (docker buildx build)" >&2; exit 2; }; \
    CGO_ENABLED=0 GOOS="$TARGETOS" GOARCH="$TARGETARCH" go build -trimpath -tags timetzdata -ldflags="-s -w" -o /out/app "$pkg"; \
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
