# A static, non-root image of grpc-config-dns, FROM scratch:
#   docker build -t grpc-config-dns .      (or: buildah bud -t grpc-config-dns .)
#   docker run --rm -p 1053:1053/udp -p 1053:1053 -p 9153:9153 grpc-config-dns
# serves the built-in example zone; deploy/kubernetes/ runs it with a config.
# The build stage needs the golang image and the Go module proxy: it is not
# built in CI, which runs offline (docs/production.md).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (no cgo), reproducible paths; the state directory is made here
# because scratch has no shell to make it.
RUN CGO_ENABLED=0 go build -trimpath -o /out/grpc-config-dns ./cmd/grpc-config-dns \
 && mkdir -p /out/state

FROM scratch
COPY --from=build /out/grpc-config-dns /grpc-config-dns
# The SOA serial state (--state) must be writable by the user below; mount
# a volume here to keep serials across restarts.
COPY --from=build --chown=65532:65532 /out/state /var/lib/grpc-config-dns
# 65532 is "nonroot" in distroless images: no name is needed in scratch.
USER 65532:65532
EXPOSE 1053/udp 1053/tcp 9153/tcp
ENTRYPOINT ["/grpc-config-dns"]
# 0.0.0.0 inside the container: the port is published by the runtime.
CMD ["serve", "--listen", "0.0.0.0:1053", "--metrics", "0.0.0.0:9153", "--state", "/var/lib/grpc-config-dns/serials"]
