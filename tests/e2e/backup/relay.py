#!/usr/bin/env python3
"""A byte-counting TCP relay for tests/e2e/test_backup.sh (test code, never installed).

    relay.py UPSTREAM_PORT PORT_FILE LOG_FILE

Listens on an ephemeral 127.0.0.1 port (written to PORT_FILE), forwards every
connection to 127.0.0.1:UPSTREAM_PORT unchanged (TLS passes through: the client
still verifies the server's certificate for 127.0.0.1), and appends one line
"SECONDS BYTES" to LOG_FILE for every block read from a client, with a monotonic
time: what the client put on the wire towards the server, TLS records and HTTP
headers included. Reads from a client never wait for the server or the log (the
log is written every 50 ms and when a client's connection closes), so the time of
a block is when the client sent it. It exits after 15 minutes whatever happens.
"""
import asyncio
import sys
import time

UPSTREAM = int(sys.argv[1])
PORT_FILE, LOG_FILE = sys.argv[2], sys.argv[3]
log = open(LOG_FILE, "a")
pending = []


async def pipe(reader, writer, count):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if count:
                pending.append("%.6f %d\n" % (time.monotonic(), len(data)))
            writer.write(data)
            # Towards the server, no waiting for it to take the bytes: a slow server
            # would otherwise hold the client's bytes in the socket buffers and the
            # log would show them later, in one burst. The queue stays small (what
            # the client sends in a second or two).
            if not count:
                await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        if count and pending:
            log.write("".join(pending))
            pending.clear()
            log.flush()
        try:
            writer.close()
        except Exception:
            pass


async def handle(creader, cwriter):
    try:
        sreader, swriter = await asyncio.open_connection("127.0.0.1", UPSTREAM)
    except OSError:
        cwriter.close()
        return
    await asyncio.gather(pipe(creader, swriter, True), pipe(sreader, cwriter, False))


async def flush():
    # The log is written every 50 ms, not per block: a write that waits for the
    # disk must not delay the next read (the time of a read is the measurement).
    while True:
        await asyncio.sleep(0.05)
        if pending:
            log.write("".join(pending))
            pending.clear()
            log.flush()


async def main():
    asyncio.get_running_loop().create_task(flush())
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with open(PORT_FILE + ".tmp", "w") as f:
        f.write(str(port))
    import os
    os.rename(PORT_FILE + ".tmp", PORT_FILE)
    async with server:
        await asyncio.sleep(900)


asyncio.run(main())
