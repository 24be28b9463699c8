# A static, non-root image of grpc-config-dns, FROM scratch:
#   docker build -t grpc-config-dns .      (or: buildah bud -t grpc-config-dns .,
#                                          podman build -t grpc-config-dns .)
#   docker run --rm -p 1053:1053/udp -p 1053:1053 -p 9153:9153 grpc-config-dns
# serves the built-in example zone; deploy/kubernetes/ runs it with a config.
#
# The default build compiles in the golang image, which needs that image and
# the Go module proxy. The stage "prebuilt" makes the same image from a
# binary built outside, and pulls nothing (scratch is not an image): its
# context is a directory holding a static grpc-config-dns (CGO_ENABLED=0)
# and an empty state/ directory. CI builds and runs it so, offline, with
# Debian's buildah (.ci/container-check.sh):
#   buildah bud --target prebuilt -f Dockerfile -t grpc-config-dns CONTEXT
#
# VERSION and REVISION (build args) are written in the image's OCI labels:
#   docker build --build-arg VERSION=v1.2.3 --build-arg REVISION=$(git rev-parse HEAD) -t grpc-config-dns .
#
# Every image is named in full (docker.io/library/…): buildah and podman
# do not resolve short names without a registries.conf that says where.
# The stages are chosen with --target, not with a build arg in FROM,
# which buildah 1.28 and podman 4.3 take for an image name.

# What both images are: the user, the ports, the command, the labels.
FROM scratch AS base
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="grpc-config-dns" \
      org.opencontainers.image.description="Publishes and resolves gRPC service configs through DNS (gRFC A2)" \
      org.opencontainers.image.source="https://github.com/grpc-config-dns/grpc-config-dns" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
# 65532 is "nonroot" in distroless images: no name is needed in scratch.
USER 65532:65532
EXPOSE 1053/udp 1053/tcp 9153/tcp
ENTRYPOINT ["/grpc-config-dns"]
# 0.0.0.0 inside the container: the port is published by the runtime.
CMD ["serve", "--listen", "0.0.0.0:1053", "--metrics", "0.0.0.0:9153", "--state", "/var/lib/grpc-config-dns/serials"]

# The image from a binary built outside, and the state directory, from the
# context. The SOA serial state (--state) must be writable by the user
# above; mount a volume at /var/lib/grpc-config-dns to keep serials across
# restarts.
FROM base AS prebuilt
COPY grpc-config-dns /grpc-config-dns
COPY --chown=65532:65532 state/ /var/lib/grpc-config-dns/

FROM docker.io/library/golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (no cgo), reproducible paths; the state directory is made here
# because scratch has no shell to make it.
RUN CGO_ENABLED=0 go build -trimpath -o /out/grpc-config-dns ./cmd/grpc-config-dns \
 && mkdir -p /out/state

# The default: the image from the binary built above.
FROM base
COPY --from=build /out/grpc-config-dns /grpc-config-dns
COPY --from=build --chown=65532:65532 /out/state /var/lib/grpc-config-dns
