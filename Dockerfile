# paycallback container image.
# Stage 1 builds on Debian 12 with the -dev packages; stage 2 is Debian 12 slim
# with the runtime libraries only, running as an unprivileged user. Both bases
# are pinned to a point release (make lint checks it); make test-image builds
# and checks the image (scripts/check-image.sh).
#   docker build -t paycallback .
#   docker run --rm paycallback --help

FROM debian:12.11 AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential pkg-config \
      libmicrohttpd-dev libmariadb-dev libhiredis-dev libcjson-dev libssl-dev \
      libcurl4-openssl-dev libsystemd-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY include/ include/
COPY src/ src/
# The migrations are built into the binary (paycallback migrate).
COPY sql/ sql/
COPY scripts/gen-migrations.sh scripts/
RUN make -j"$(nproc)" all && strip build/paycallback

FROM debian:12.11-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libmicrohttpd12 libmariadb3 libhiredis0.14 libcjson1 libssl3 libcurl4 libsystemd0 \
      ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin paycallback
COPY --from=build /src/build/paycallback /usr/local/bin/paycallback
COPY config/paycallback.json /etc/paycallback/paycallback.json
COPY console/ /usr/share/paycallback/console/
# Inside a container the service must listen beyond loopback; every other
# setting comes from the shipped config, overridden by PAYCALLBACK_* variables.
# The image holds no usable secret: the shipped config's development secret
# is refused without --dev, so PAYCALLBACK_CALLBACK_SECRET must be given at
# run time (docker-compose.yml requires it).
ENV PAYCALLBACK_LISTEN_ADDRESS=0.0.0.0 PAYCALLBACK_CONSOLE_DIR=/usr/share/paycallback/console
USER paycallback:paycallback
EXPOSE 8080
# The binary is PID 1: it blocks SIGTERM/SIGINT and takes them with sigwait,
# which works for PID 1 as well. Give it more than grace_s (10 s) to drain.
STOPSIGNAL SIGTERM
# Liveness only: a MySQL outage must not get the container restarted (it
# recovers by itself); readiness is /readyz, used by the compose file.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${PAYCALLBACK_LISTEN_PORT:-8080}/healthz" || exit 1
ENTRYPOINT ["/usr/local/bin/paycallback", "-c", "/etc/paycallback/paycallback.json"]
