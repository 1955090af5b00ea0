#
# Copyright 2026 gr-mimodet developers.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
"""The receiver split across two hosts over GNU Radio's own ZeroMQ blocks (docs/SPLIT.md).

A radio host runs the synchronisation (and optionally the FFT) and sends each slot with
its tags; a GPU host runs channel estimation and detection. The slots travel as one
stream of one item per slot, the slot of every antenna (its grid, or its samples as
ofdm_sync puts them out, whole slots), so a ZeroMQ message, which always holds whole
items, holds whole slots, also when the receiving process is restarted.

    radio host:  ... -> ofdm_sync [-> ofdm_demod] -> slot_stream_sink(address)
    GPU host:    slot_stream_source(address) -> mimo_receiver -> ...

slot_stream_sink binds a PUSH socket (the stable address, on the radio host) and
slot_stream_source connects a PULL socket to it. PUSH waits while no receiver is
connected, so a sender keeps its place while the receiver restarts (a live radio then
overflows, as with any receiver that stops reading); the slots queued towards a receiver
that dies are lost with it.
"""

import threading

from gnuradio import blocks, gr, zeromq

from .mimodet_python import lte_numerology

DOMAINS = ("grids", "samples")
#: The sink's send poll timeout, ms: how long a stop waits for a receiver at most.
ZMQ_SEND_TIMEOUT_MS = 100
#: The source's receive poll timeout, ms.
ZMQ_RECV_TIMEOUT_MS = 1
#: The ZeroMQ blocks' blocked-input timer, ms. A pull_source that finds no message (or a
#: push_sink that cannot send yet) returns nothing, and GNU Radio's scheduler then waits
#: for that timer before calling it again (about 250 ms by default): an idle moment
#: between two slots would delay the next one by up to a quarter of a second
#: (docs/SPLIT.md has the measurement).
ZMQ_BLOCKED_TIMER_MS = 1


def _slot_layout(bandwidth_mhz, domain):
    """(bytes of one antenna's stream item, its items per slot): a slot's grid
    (gr_complex[7 * n_sc]) once, or slot_samples time-domain samples (gr_complex)."""
    if domain not in DOMAINS:
        raise ValueError("domain must be one of %s, got %r" % (DOMAINS, domain))
    num = lte_numerology.from_bandwidth(float(bandwidth_mhz))
    if domain == "samples":
        return gr.sizeof_gr_complex, num.slot_samples()
    return gr.sizeof_gr_complex * 7 * num.n_sc, 1


def stream_item_size(bandwidth_mhz, domain):
    """Bytes of one antenna's stream item: a slot's grid or a time-domain sample."""
    return _slot_layout(bandwidth_mhz, domain)[0]


def network_rate_bytes_per_s(bandwidth_mhz, n_rx, domain):
    """Payload bytes per second one carrier sends in real time (2000 slots/s)."""
    item, per_slot = _slot_layout(bandwidth_mhz, domain)
    return item * per_slot * int(n_rx) * 2000


def add_carrier_arguments(parser, default_address):
    """The command-line options both hosts of the split examples share: the carrier
    (--bandwidth, --antennas, --modulation, --cell-id, --seed), --domain, --address and
    --hwm."""
    parser.add_argument("--bandwidth", type=float, default=5.0,
                        choices=[1.4, 3.0, 5.0, 10.0, 15.0, 20.0], help="MHz (default 5)")
    parser.add_argument("--antennas", type=int, default=2, choices=[1, 2, 4],
                        help="transmit = receive antennas (default 2)")
    parser.add_argument("--modulation", default="16qam", choices=["qpsk", "16qam", "64qam"])
    parser.add_argument("--cell-id", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1,
                        help="the radio's bits, fading and noise seed (>= 1 reproducible)")
    parser.add_argument("--domain", default="grids", choices=DOMAINS,
                        help="grids: the FFT on the radio host; samples: ofdm_sync's output "
                             "(demodulated on the GPU host)")
    parser.add_argument("--address", default=default_address,
                        help="ZeroMQ endpoint (default %s)" % default_address)
    parser.add_argument("--hwm", type=int, default=16,
                        help="ZeroMQ high-water mark in messages (of one or more slots) at "
                             "each end (default 16)")
    return parser


def _checked_layout(bandwidth_mhz, n_rx, domain, address):
    """(bytes of one antenna's stream item, items per antenna and slot)."""
    if not 1 <= int(n_rx) <= 8:
        raise ValueError("n_rx must be 1..8, got %r" % (n_rx,))
    if not isinstance(address, str) or "://" not in address:
        raise ValueError("address must be a ZeroMQ endpoint such as 'tcp://*:5555' or "
                         "'tcp://radio-host:5555', got %r" % (address,))
    return _slot_layout(bandwidth_mhz, domain)


class slot_stream_sink(gr.hier_block2):
    """n_rx antenna streams (ofdm_sync's samples or ofdm_demod's grids, with their tags)
    -> one ZeroMQ PUSH socket bound to address (e.g. 'tcp://*:5555').

    hwm: the socket's high-water mark in messages (-1: ZeroMQ's default, 1000)."""

    def __init__(self, bandwidth_mhz, n_rx, domain="grids", address="tcp://*:5555", hwm=-1):
        item, per_slot = _checked_layout(bandwidth_mhz, n_rx, domain, address)
        n_rx = int(n_rx)
        gr.hier_block2.__init__(self, "slot_stream_sink",
                                gr.io_signature(n_rx, n_rx, item), gr.io_signature(0, 0, 0))
        # Each antenna's slot as one item (a grid is one already), then the antennas' slots
        # side by side as one item: a "slot" tag on a slot's first sample stays on its item.
        self.slot_items = [blocks.stream_to_vector(item, per_slot) for _ in range(n_rx)] \
            if per_slot > 1 else []
        self.pack = blocks.streams_to_vector(item * per_slot, n_rx)
        self.push = zeromq.push_sink(item * per_slot * n_rx, 1, address, ZMQ_SEND_TIMEOUT_MS,
                                     True, int(hwm))
        for b in self.slot_items + [self.pack, self.push]:
            b.set_blkd_input_timer_value(ZMQ_BLOCKED_TIMER_MS)
        for r in range(n_rx):
            if self.slot_items:
                self.connect((self, r), self.slot_items[r], (self.pack, r))
            else:
                self.connect((self, r), (self.pack, r))
        self.connect(self.pack, self.push)
        self._message_size = item * per_slot * n_rx

    def local_endpoint(self):
        """The bound socket's endpoint as a process on this host connects to it."""
        endpoint = self.push.last_endpoint()
        return endpoint.replace("//0.0.0.0:", "//127.0.0.1:").replace("//[::]:", "//[::1]:")

    def drain(self):
        """A top block that takes what this sink sends (to a null sink), from this host;
        stop_sender starts one where a send waits for a receiver that is gone."""
        tb = gr.top_block("slot_stream_sink drain")
        pull = zeromq.pull_source(self._message_size, 1, self.local_endpoint(),
                                  ZMQ_RECV_TIMEOUT_MS, True, -1)
        tb.connect(pull, blocks.null_sink(self._message_size))
        return tb


def stop_sender(tb, sink, wait_s=2.0):
    """tb.stop() and tb.wait() for a flowgraph that sends through sink (a
    slot_stream_sink). The push sink polls for a receiver before each send, but a receiver
    that ends or crashes between that poll and the send leaves the send waiting for the
    next receiver, where GNU Radio's stop cannot reach it. If the flowgraph has not ended
    after wait_s seconds, a local receiver (sink.drain()) takes that message so that it
    ends. Returns True if it had to."""
    tb.stop()
    waiter = threading.Thread(target=tb.wait, daemon=True)
    waiter.start()
    waiter.join(wait_s)
    if not waiter.is_alive():
        return False
    drain = sink.drain()
    drain.start()
    waiter.join()
    drain.stop()
    drain.wait()
    return True


class slot_stream_source(gr.hier_block2):
    """A ZeroMQ PULL socket connected to address (e.g. 'tcp://radio-host:5555') -> the
    n_rx antenna streams a slot_stream_sink sent, with their tags ("slot" on antenna 0's
    stream, as ofdm_sync and ofdm_demod put them)."""

    def __init__(self, bandwidth_mhz, n_rx, domain="grids",
                 address="tcp://127.0.0.1:5555", hwm=-1):
        item, per_slot = _checked_layout(bandwidth_mhz, n_rx, domain, address)
        n_rx = int(n_rx)
        gr.hier_block2.__init__(self, "slot_stream_source",
                                gr.io_signature(0, 0, 0), gr.io_signature(n_rx, n_rx, item))
        self.pull = zeromq.pull_source(item * per_slot * n_rx, 1, address,
                                       ZMQ_RECV_TIMEOUT_MS, True, int(hwm))
        # Synchronous blocks only: they make their items visible after the scheduler has put
        # the tags on them. blocks.deinterleave produces each output inside its work() and
        # its tags follow after, so mimo_receiver could see a slot before its "slot" tag
        # and number it by counting (wrong for the first slot a receiver gets).
        self.unpack = blocks.vector_to_streams(item * per_slot, n_rx)
        self.slot_items = [blocks.vector_to_stream(item, per_slot) for _ in range(n_rx)] \
            if per_slot > 1 else []
        for b in [self.pull, self.unpack] + self.slot_items:
            b.set_blkd_input_timer_value(ZMQ_BLOCKED_TIMER_MS)
        self.connect(self.pull, self.unpack)
        for r in range(n_rx):
            if self.slot_items:
                self.connect((self.unpack, r), self.slot_items[r], (self, r))
            else:
                self.connect((self.unpack, r), (self, r))
