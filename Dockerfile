# Lodestore: the controller and the lode command in one small image.
#
# Stage 1 builds with Debian's -dev packages; stage 2 carries only the shared libraries,
# tzdata (schedules are evaluated with the image's tz database, reported in status and
# metrics) and CA certificates, and runs as an unprivileged user with a read-only root.
# The build stage has no npm, so the image's lode serves lode ui without its page
# (docs/ui.md); lode ui is run from a workstation, not from the image.
FROM debian:bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential pkg-config git ca-certificates \
      libuv1-dev libcurl4-openssl-dev libjansson-dev libyaml-dev libssl-dev libexpat1-dev \
      libzstd-dev libmicrohttpd-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The build context has no .git, so the version comes in as an argument (the Makefile
# would otherwise say 0.0.0-dev): docker build --build-arg VERSION="$(git describe ...)".
ARG VERSION=0.0.0-dev
RUN make -j"$(nproc)" CFLAGS="-O2 -g0" VERSION="$VERSION" all \
    && install -D -m 0755 build/lode /out/usr/local/bin/lode \
    && if [ -x build/lode-controller ]; then install -m 0755 build/lode-controller /out/usr/local/bin/; fi

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      libuv1 libcurl4 libjansson4 libyaml-0-2 libssl3 libexpat1 libzstd1 libmicrohttpd12 \
      tzdata ca-certificates \
    && rm -rf /var/lib/apt/lists/* /usr/share/doc /usr/share/man
COPY --from=build /out/ /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/lode-controller"]
