# syntax=docker/dockerfile:1
#
# Two images from one build:
#
#   docker build --target garra   -t ghcr.io/garraia/garra:TAG .
#   docker build --target sandbox -t ghcr.io/garraia/garra-sandbox:TAG .
#
# garra (the default, last stage): the static `garra` and `manager` binaries on
# distroless, non-root. Its entrypoint is garra, so
#   docker run -i --rm ghcr.io/garraia/garra:TAG mcp-server
# is the stdio MCP server, as server.json tells MCP hosts (the label names the
# server for the MCP registry). Deployments name their own command, which
# replaces the entrypoint: the operator's (config/manager,
# charts/garra-operator) runs /manager; the gateway Deployments the operator
# creates run `garra gateway --config ...` (garra is on PATH).
# hack/imagebuild writes the same config; its test compares the two.
#
# sandbox: `garra sandbox` on Debian slim with bash, git and CA certificates,
# the tools an agent's shell needs, as user 65532 in /workspace.
#
# Build arguments: VERSION and COMMIT are stamped into `garra version`.

ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=""
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/garra ./cmd/garra && \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags "-s -w" \
      -o /out/manager ./cmd/manager

FROM debian:bookworm-slim AS sandbox
# A workspace volume may be owned by another uid (fsGroup), which git refuses
# as "dubious ownership": the pod has one user, so every directory is safe.
RUN apt-get update && \
    apt-get install -y --no-install-recommends bash ca-certificates git && \
    rm -rf /var/lib/apt/lists/* && \
    groupadd --gid 65532 garra && \
    useradd --uid 65532 --gid 65532 --create-home --home-dir /home/garra --shell /bin/bash garra && \
    mkdir /workspace && chown 65532:65532 /workspace && \
    git config --system --add safe.directory '*'
COPY --from=build /out/garra /usr/local/bin/garra
USER 65532:65532
ENV HOME=/home/garra
WORKDIR /workspace
EXPOSE 8080
ENTRYPOINT ["garra", "sandbox"]

FROM gcr.io/distroless/static-debian12:nonroot AS garra
COPY --from=build /out/garra /usr/local/bin/garra
COPY --from=build /out/manager /manager
LABEL io.modelcontextprotocol.server.name="io.github.garraia/garra"
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    HOME=/home/nonroot
USER 65532:65532
WORKDIR /home/nonroot
ENTRYPOINT ["garra"]
CMD ["mcp-server"]
