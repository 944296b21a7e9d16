# Lodestore: the controller and the lode command in one small image.
#
# Stage 1 builds with Debian's -dev packages; stage 2 carries only the shared libraries,
# tzdata (schedules are evaluated with the image's tz database, reported in status and
# metrics) and CA certificates, and runs as an unprivileged user with a read-only root.
# The build stage has no npm, so the image's lode serves lode ui without its page
# (docs/ui.md); lode ui is run from a workstation, not from the image.
#
# The bases are pinned to a Debian point release (docs/security.md, "The image's bases"):
# a release build adds each one's @sha256 digest, and DEBIAN_SNAPSHOT (a
# snapshot.debian.org timestamp such as 20260711T000000Z) pins every package too.
FROM debian:12.15 AS build
ARG DEBIAN_SNAPSHOT=
RUN if [ -n "$DEBIAN_SNAPSHOT" ]; then \
      printf 'deb [check-valid-until=no] http://snapshot.debian.org/archive/debian/%s bookworm main\ndeb [check-valid-until=no] http://snapshot.debian.org/archive/debian-security/%s bookworm-security main\n' \
        "$DEBIAN_SNAPSHOT" "$DEBIAN_SNAPSHOT" >/etc/apt/sources.list \
      && rm -f /etc/apt/sources.list.d/*; fi
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

FROM debian:12.15-slim
ARG DEBIAN_SNAPSHOT=
RUN if [ -n "$DEBIAN_SNAPSHOT" ]; then \
      printf 'deb [check-valid-until=no] http://snapshot.debian.org/archive/debian/%s bookworm main\ndeb [check-valid-until=no] http://snapshot.debian.org/archive/debian-security/%s bookworm-security main\n' \
        "$DEBIAN_SNAPSHOT" "$DEBIAN_SNAPSHOT" >/etc/apt/sources.list \
      && rm -f /etc/apt/sources.list.d/*; fi
RUN apt-get update && apt-get install -y --no-install-recommends \
      libuv1 libcurl4 libjansson4 libyaml-0-2 libssl3 libexpat1 libzstd1 libmicrohttpd12 \
      tzdata ca-certificates \
    && rm -rf /var/lib/apt/lists/* /usr/share/doc /usr/share/man
COPY --from=build /out/ /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/lode-controller"]
