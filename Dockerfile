# oncecount as a container image: `docker build -t oncecount .` at the repository root.
#
# The build stage runs the same scripts as the README and CI (scripts/setup installs the
# Debian 12 packages, scripts/build configures and builds); tests/deploy checks that the
# two stay in step. The runtime stage holds the binary, its shared libraries, curl for
# the health check and a non-root user. docs/operations.md explains how to run it.

FROM debian:bookworm AS build
WORKDIR /src
# scripts/setup first, alone: its layer (the packages) survives source changes.
COPY scripts/setup scripts/setup
RUN scripts/setup && rm -rf /var/lib/apt/lists/*
COPY . .
# Benchmarks are not built into images; everything else is what `scripts/test` builds,
# without warnings as errors (a packager's build must not fail on a compiler's new warning).
RUN BUILD_DIR=build scripts/build -DONCECOUNT_BENCHMARKS=OFF \
 && install -D -s -m 0755 build/processor/cmd/oncecount /out/usr/local/bin/oncecount

FROM debian:bookworm-slim AS runtime
# The shared libraries of the binary (librdkafka brings OpenSSL, SASL, zstd, lz4, zlib)
# and curl for HEALTHCHECK. libsasl2-modules-gssapi-mit is only needed for Kerberos
# (sasl.mechanisms=GSSAPI): add it in a derived image.
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      librdkafka1 libyaml-cpp0.7 libxxhash0 libzstd1 libsimdjson14 ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 oncecount \
 && useradd --system --uid 10001 --gid oncecount --home-dir /var/lib/oncecount \
      --shell /usr/sbin/nologin oncecount \
 && install -d -o oncecount -g oncecount -m 0750 /var/lib/oncecount
COPY --from=build /out/usr/local/bin/oncecount /usr/local/bin/oncecount
# The image's configuration (listens on 0.0.0.0:8080; Kafka from the environment).
# Mount your own over it, or override keys with ONCECOUNT_<SECTION>_<KEY>.
COPY deploy/oncecount.image.yaml /etc/oncecount/oncecount.yaml
# Every key with its default and its meaning, for reference.
COPY config/oncecount.yaml /usr/share/doc/oncecount/oncecount.yaml

USER 10001:10001
WORKDIR /var/lib/oncecount
EXPOSE 8080
# SIGTERM (docker stop) drains, commits and leaves the consumer group; give it time
# (docker stop -t 90, stop_grace_period in compose, terminationGracePeriodSeconds).
STOPSIGNAL SIGTERM
# /healthz answers 200 while the process runs. Set ONCECOUNT_HEALTHZ_URL when the
# configuration listens elsewhere than port 8080.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD curl -fsS -o /dev/null "${ONCECOUNT_HEALTHZ_URL:-http://127.0.0.1:8080/healthz}" || exit 1
ENTRYPOINT ["oncecount"]
CMD ["serve", "--config", "/etc/oncecount/oncecount.yaml"]
