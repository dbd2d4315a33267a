#!/usr/bin/env python3
"""A TCP link emulator for bench/remote_compare.sh: listens on 127.0.0.1 and forwards every
connection to an upstream server, adding a one-way delay to the bytes in each direction and a
bandwidth cap, shared by all connections, on the way back (a WAN link in front of a server).

It stands in for `tc netem`, which the benchmark machine's kernel does not have
(CONFIG_NET_SCH_NETEM is not set). What it models: propagation delay (a request waits one
round trip for its first byte, a new connection one more for its handshake), and the link's
serialisation at the capped rate. What it does not: loss, reordering, TCP's own window growth
on a long fat pipe (the proxy buffers up to 16 MiB per direction and connection).

usage: link_emulator.py --listen PORT --upstream HOST:PORT --rtt-ms 20 [--rate-mbit 200]
Prints "ready" on stdout once it listens.
"""
import argparse
import asyncio
import sys
import time

CHUNK = 256 * 1024
QUEUE_CHUNKS = 64  # 16 MiB in flight per direction at most: backpressure beyond


class Link:
    """Serialisation at `rate` bytes per second, shared by every connection using it."""

    def __init__(self, rate):
        self.rate = rate
        self.free_at = 0.0

    def depart(self, now, n):
        if not self.rate:
            return now
        start = max(now, self.free_at)
        self.free_at = start + n / self.rate
        return self.free_at


async def carry(reader, writer, delay, link):
    queue = asyncio.Queue(QUEUE_CHUNKS)

    async def take():
        while True:
            data = await reader.read(CHUNK)
            now = time.monotonic()
            await queue.put((link.depart(now, len(data)) + delay if link else now + delay, data))
            if not data:
                return

    async def give():
        while True:
            arrival, data = await queue.get()
            wait = arrival - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                try:
                    writer.write_eof()
                except (OSError, RuntimeError):
                    pass
                return
            writer.write(data)
            await writer.drain()

    try:
        await asyncio.gather(take(), give())
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--listen", type=int, required=True)
    p.add_argument("--upstream", required=True)
    p.add_argument("--rtt-ms", type=float, default=0)
    p.add_argument("--rate-mbit", type=float, default=0)
    a = p.parse_args()
    host, port = a.upstream.rsplit(":", 1)
    one_way = a.rtt_ms / 2000.0
    down = Link(a.rate_mbit * 1e6 / 8) if a.rate_mbit else None

    async def serve(client_reader, client_writer):
        await asyncio.sleep(2 * one_way)  # the handshake's round trip
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(carry(client_reader, up_writer, one_way, None),
                             carry(up_reader, client_writer, one_way, down))

    server = await asyncio.start_server(serve, "127.0.0.1", a.listen, backlog=512)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
