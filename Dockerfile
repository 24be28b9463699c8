# A static, non-root image of grpc-config-dns, FROM scratch:
#   docker build -t grpc-config-dns .      (or: buildah bud -t grpc-config-dns .)
#   docker run --rm -p 1053:1053/udp -p 1053:1053 -p 9153:9153 grpc-config-dns
# serves the built-in example zone; deploy/kubernetes/ runs it with a config.
#
# The default build compiles in the golang image, which needs that image and
# the Go module proxy. With --build-arg BIN=prebuilt the same final image is
# made from a binary built outside, and nothing is pulled (scratch is not an
# image): the context is a directory holding a static grpc-config-dns
# (CGO_ENABLED=0) and an empty state/ directory. CI builds and runs it so,
# offline, with Debian's buildah (.ci/container-check.sh):
#   buildah bud --build-arg BIN=prebuilt -f Dockerfile -t grpc-config-dns CONTEXT
ARG BIN=build

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (no cgo), reproducible paths; the state directory is made here
# because scratch has no shell to make it.
RUN CGO_ENABLED=0 go build -trimpath -o /out/grpc-config-dns ./cmd/grpc-config-dns \
 && mkdir -p /out/state

# A binary built outside, and the state directory, from the context.
FROM scratch AS prebuilt
COPY grpc-config-dns /out/grpc-config-dns
COPY state/ /out/state/

# Where the binary comes from: build (default) or prebuilt. Builders skip
# the stage not chosen.
FROM ${BIN} AS bin

FROM scratch
COPY --from=bin /out/grpc-config-dns /grpc-config-dns
# The SOA serial state (--state) must be writable by the user below; mount
# a volume here to keep serials across restarts.
COPY --from=bin --chown=65532:65532 /out/state /var/lib/grpc-config-dns
# 65532 is "nonroot" in distroless images: no name is needed in scratch.
USER 65532:65532
EXPOSE 1053/udp 1053/tcp 9153/tcp
ENTRYPOINT ["/grpc-config-dns"]
# 0.0.0.0 inside the container: the port is published by the runtime.
CMD ["serve", "--listen", "0.0.0.0:1053", "--metrics", "0.0.0.0:9153", "--state", "/var/lib/grpc-config-dns/serials"]
