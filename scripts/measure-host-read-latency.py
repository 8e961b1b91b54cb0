#!/usr/bin/env python3
"""Time what one step of NCCL's SHM ring is made of on the GPU this runs on: a kernel's dependent
load from mapped pinned host memory (round trip), and a store into host memory seen by a kernel
polling it (one hop of a ring step, measured as a ping-pong between two thread blocks).

Why: without P2P, NCCL moves every collective through pinned host memory (`SHM/direct/direct`):
the sender's kernel stores into it over PCIe and the receiver's kernel polls it. shardwise costs
each ring step from one host-read round trip (`sim/src/machine/shm_ring.rs`), which it takes from
`probe`'s mapped-kernel staging: a 4 KiB load by one kernel, less an empty graph node's time
(3.18 us on the lent guest, `probe/profiles/h200-x1.vm-fields.json`). That figure holds whatever
a one-shot kernel pays besides the round trip; NCCL's kernels poll the same few lines over and
over. This measures the round trip itself, warm and cold, and the store-to-poll hop.

Kernels (probe's own, `probe/src/cuda/kernels.rs` ROUND_TRIP_SRC, through CuPy's NVRTC), one thread
each unless said:
- chase: N dependent 8-byte `ld.volatile` loads following a ring of pointers laid out in the
  buffer (host or device), the ring's stride and length set per pattern: `lines` (16 lines of one
  4 KiB page: the GPU's and the IOMMU's translations stay warm), `pages` (one line per 4 KiB page
  over 2 MiB), `spread` (one line per 64 KiB over 256 MiB). Time = kernel time / N, the launch
  amortised over N loads.
- pingpong: two blocks on different multiprocessors hand a counter back and forth through two
  8-byte flags (`st.release.sys` / `ld.acquire.sys`), in host or device memory; time = kernel
  time / (2 N): one hop (a store and the poll that sees it).

Writes CSV rows to stdout: test, memory, pattern, n, us per operation (median of REPEATS runs),
p10, p90.
"""
import os
import statistics

import cupy as cp

REPEATS = int(os.environ.get("REPEATS", "7"))
N_CHASE = int(os.environ.get("N_CHASE", "20000"))
N_PING = int(os.environ.get("N_PING", "20000"))

def probe_kernels():
    """The round-trip kernels `probe` compiles (`probe/src/cuda/kernels.rs`, `ROUND_TRIP_SRC`): one
    source for both. The two CSVs of 2026-12-04 were measured with this script's first version
    (commit 318f8fc), whose inline kernels did the same (its ping-pong reset the flags between
    launches instead of counting on from a base)."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "probe", "src", "cuda", "kernels.rs")) as f:
        rust = f.read()
    head = 'const ROUND_TRIP_SRC: &str = r#"'
    start = rust.index(head) + len(head)
    return rust[start : rust.index('"#;', start)]


SRC = probe_kernels()

mod = cp.RawModule(code=SRC, options=("-std=c++17",))
chase_k = mod.get_function("host_chase")
ping_k = mod.get_function("host_pingpong")


class HostBuf:
    """Mapped pinned host memory, addressed from the GPU by its device pointer."""

    def __init__(self, nbytes):
        rt = cp.cuda.runtime
        self.host = rt.hostAlloc(nbytes, rt.hostAllocMapped)
        # unified addressing: a mapped pinned allocation's device pointer is its host pointer
        self.dev = self.host
        self.nbytes = nbytes
        import ctypes

        self.view = (ctypes.c_uint64 * (nbytes // 8)).from_address(self.host)

    def write(self, index, value):
        self.view[index] = value

    def ptr(self):
        return self.dev


class DevBuf:
    def __init__(self, nbytes):
        self.arr = cp.zeros(nbytes // 8, dtype=cp.uint64)
        self.nbytes = nbytes
        self.staged = {}

    def write(self, index, value):
        self.staged[index] = value

    def flush(self):
        if self.staged:
            idx = cp.asarray(list(self.staged.keys()), dtype=cp.int64)
            val = cp.asarray(list(self.staged.values()), dtype=cp.uint64)
            self.arr[idx] = val
            self.staged.clear()

    def ptr(self):
        return self.arr.data.ptr


PATTERNS = {
    # name: (stride bytes, lines)
    "lines": (256, 16),
    "pages": (4096, 512),
    "spread": (65536, 4096),
}


def build_ring(buf, stride, lines):
    step = stride // 8
    for j in range(lines):
        buf.write(j * step, ((j + 1) % lines) * step)
    if isinstance(buf, DevBuf):
        buf.flush()


def timed(launch, repeats):
    start, end = cp.cuda.Event(), cp.cuda.Event()
    launch()  # warm-up (module load, translations)
    cp.cuda.Device().synchronize()
    out = []
    for _ in range(repeats):
        start.record()
        launch()
        end.record()
        end.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, end) * 1e3)  # us
    return out


def row(test, mem, pattern, n, per_op_us):
    s = sorted(per_op_us)
    p10 = s[max(0, int(0.1 * (len(s) - 1)))]
    p90 = s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))]
    print(f"{test},{mem},{pattern},{n},{statistics.median(s):.3f},{p10:.3f},{p90:.3f}", flush=True)


def main():
    props = cp.cuda.runtime.getDeviceProperties(0)
    print(f"# device {props['name'].decode()}, {props['multiProcessorCount']} SMs", flush=True)
    print("test,memory,pattern,n,us_per_op_median,us_p10,us_p90", flush=True)
    out = cp.zeros(2, dtype=cp.uint64)
    for mem in ("host", "device"):
        for pattern, (stride, lines) in PATTERNS.items():
            nbytes = stride * lines
            buf = HostBuf(nbytes) if mem == "host" else DevBuf(nbytes)
            build_ring(buf, stride, lines)
            n = N_CHASE
            ts = timed(
                lambda: chase_k((1,), (1,), (cp.uint64(buf.ptr()), cp.uint64(0), cp.int32(n), out)),
                REPEATS,
            )
            row("chase", mem, pattern, n, [t / n for t in ts])
    for mem in ("host", "device"):
        out[:] = 0  # the chase wrote its last index here; the ping-pong's guard flags start clear
        buf = HostBuf(4096) if mem == "host" else DevBuf(4096)
        n = N_PING

        def launch():
            if mem == "host":
                buf.write(0, 0)
                buf.write(16, 0)
            else:
                buf.arr[:] = 0
            ping_k((2,), (32,), (cp.uint64(buf.ptr()), cp.uint64(0), cp.int32(n), out))

        ts = timed(launch, REPEATS)
        if int(out[0]) or int(out[1]):
            print(f"# pingpong {mem}: a block gave up waiting (guard hit)", flush=True)
        row("pingpong_hop", mem, "2 blocks", n, [t / (2 * n) for t in ts])


if __name__ == "__main__":
    main()
