"""The control-flow replay (graphmem.ort.controlflow) on hand-built programs: no ONNX."""

from __future__ import annotations

from graphmem.ort.allocation import plan_ort
from graphmem.ort.controlflow import Frame, Kernel, Temp, Upfront, _BestFit, align, replay
from graphmem.planner.program import Program, Step, Value


def _body(sizes: list[int]) -> Program:
    """A chain: feed f -> t0 -> t1 -> ... -> out (the last value is the body's output)."""
    values = [Value(name="f", size=100, source=True)]
    steps = []
    for k, size in enumerate(sizes):
        values.append(Value(name=f"t{k}", size=size, output=k == len(sizes) - 1))
        steps.append(Step(label=f"n{k}", inputs=(k,), outputs=(k + 1,)))
    return Program(values=tuple(values), steps=tuple(steps))


def _parent() -> Program:
    """x (fresh, 1,000 B) -> the control-flow step reading x and writing y (300 B)."""
    values = (Value(name="in", size=10, source=True), Value(name="x", size=1_000), Value(name="y", size=300, output=True))
    steps = (Step(label="pre", inputs=(0,), outputs=(1,)), Step(label="cf", inputs=(1,), outputs=(2,)))
    return Program(values=values, steps=steps)


def test_best_fit_reuses_the_tightest_gap() -> None:
    # a@0 (256), b@256 (512), c@768 (256); free b; d (256) goes into b's gap at 256 (the
    # smallest gap that fits), e (512) after c at 1,024: peak 1,536
    planner = _BestFit()
    for value, size in ((1, 256), (2, 512), (3, 256)):
        planner.allocate(value, size)
    planner.free(2)
    planner.allocate(4, 256)
    planner.allocate(5, 512)
    assert [(o, s) for o, s, _ in planner.blocks] == [(0, 256), (256, 256), (768, 256), (1_024, 512)]
    assert planner.peak == 1_536
    assert align(1_600) == 1_792 and align(256) == 256 and align(1) == 256


def test_loop_frames_pattern_and_kept_outputs() -> None:
    # body: t0 300 (freed after n1), t1 200 (the output, kept two frames, as a Loop's carried value)
    body = _body([300, 200])
    plan = plan_ort(body)
    frame = Frame(label="cf/body/", program=body, plan=plan, body="cf/body", key=7, kept=(2,), dropped_at={2: 2})
    kernel = Kernel(frames=(frame, frame, frame), before=(Temp(8), Temp(1)), released_before={1: (1,)})
    parent = _parent()
    r = replay(parent, plan_ort(parent), {1: kernel})
    got = [(s.label, s.bytes) for s in r.samples]
    # held before cf: x 1,000. frame 1 (traced): +9, t0 300 -> 1,309; t1 200 -> 1,509.
    # frame 2: the first condition byte released, t1 of frame 1 kept, block align(300) = 512:
    #   1,000 + 8 + 200 + 512 = 1,720 at n0; + t1 200 -> 1,920 at n1.
    # frame 3: frame 1's t1 is released before it: 1,000 + 8 + 200 + 512 (+ 200) -> 1,720, 1,920.
    # cf's own sample: x + y = 1,300.
    assert got == [
        ("pre", 1_000), ("cf", 1_300),
        ("cf/body/n0", 1_309), ("cf/body/n1", 1_509),
        ("cf/body/n0", 1_720), ("cf/body/n1", 1_920),
        ("cf/body/n0", 1_720), ("cf/body/n1", 1_920),
    ]
    assert (r.peak_bytes, r.peak_label) == (1_920, "cf/body/n1")


def test_a_disabled_pattern_requests_every_buffer_each_frame() -> None:
    body = _body([300, 200])
    frame = Frame(label="b/", program=body, plan=plan_ort(body), body="b", key=0, pattern=False)
    parent = _parent()
    r = replay(parent, plan_ort(parent), {1: Kernel(frames=(frame, frame))})
    assert [s.bytes for s in r.samples[2:]] == [1_300, 1_500, 1_300, 1_500]  # x + t0, x + t0 + t1


def test_upfront_outputs_are_held_during_the_body() -> None:
    body = _body([300])
    frame = Frame(label="b/", program=body, plan=plan_ort(body), body="b", key=0)
    parent = _parent()
    r = replay(parent, plan_ort(parent), {1: Kernel(frames=(frame,), before=(Upfront(2),))})
    assert [s.bytes for s in r.samples] == [1_000, 1_300, 1_600]  # body sample: x + y + t0


def test_an_initializer_returned_by_a_loop_body_is_copied_per_frame() -> None:
    # the body returns one of its initializers as the condition (1 B): each frame copies it when
    # it starts and the kernel keeps it two frames; frame 2 holds frame 1's copy and its own
    body = _body([300])
    frame = Frame(label="b/", program=body, plan=plan_ort(body), body="b", key=0, pattern=False, copies=((1, 2),))
    parent = _parent()
    r = replay(parent, plan_ort(parent), {1: Kernel(frames=(frame, frame, frame))})
    assert [s.bytes for s in r.samples[2:]] == [1_301, 1_302, 1_302]  # x + copies + t0 (not kept)


def test_arena_in_use_with_body_scratch_and_an_output_the_body_allocates() -> None:
    # the body's n0 writes t0, which is the parent's y (an If output allocated by the branch, 300 B
    # as the parent sizes it), and takes 500 B of scratch after it. Requests and releases, in order
    # (chunks are 256 B multiples): x 1,000 -> 1,024; [cf] y 300 -> 512 (the parent's from now
    # on); scratch 500 -> 512: in-use 2,048 at n0's highest; the scratch is released before n0's
    # sample; cf's sample: x + y = 1,536 B of chunks, 1,300 requested.
    body = _body([300])
    frame = Frame(
        label="cf/then/", program=body, plan=plan_ort(body), body="cf/then", key=0,
        delayed={1: 2}, scratch=(((), (500,)),),
    )
    parent = _parent()
    r = replay(parent, plan_ort(parent), {1: Kernel(frames=(frame,))})
    assert [(s.label, s.bytes, s.in_use) for s in r.samples] == [
        ("pre", 1_000, 1_024), ("cf", 1_300, 1_536), ("cf/then/n0", 1_300, 2_048),
    ]
    assert (r.peak_bytes, r.in_use_peak_bytes) == (1_300, 2_048)


def test_kernel_temporaries_are_requested_in_the_kernel_s_order() -> None:
    # Scan-like: a 300 B temporary, then the upfront output y (300 B), then a 700 B temporary;
    # a frame-less kernel: 1,000 + 300 + 300 + 700 = 2,300 requested at the highest, 1,024 + 512
    # + 512 + 768 = 2,816 B of chunks (cf's in-use at its highest); the temporaries are released
    # before cf's sample (x + y requested).
    parent = _parent()
    kernel = Kernel(frames=(), before=(Temp(300), Upfront(2), Temp(700)))
    r = replay(parent, plan_ort(parent), {1: kernel})
    assert [(s.label, s.bytes, s.in_use) for s in r.samples] == [("pre", 1_000, 1_024), ("cf", 1_300, 2_816)]
    assert r.in_use_peak_bytes == 2_816
    assert kernel.held == 1_000 and kernel.upfront == (2,)


def test_a_nested_kernel_s_upfront_output_is_the_enclosing_step_s_delayed_one() -> None:
    # cf's branch returns the output of a nested If (its step n0), allocated by that If before its
    # own branch; it is cf's output y: one request of 300 B, not two (If in If, onnx's AffineGrid)
    body = _body([300])
    frame = Frame(
        label="cf/then/", program=body, plan=plan_ort(body), body="cf/then", key=0,
        delayed={1: 2}, nested={0: Kernel(frames=(), before=(Upfront(1),))},
    )
    parent = _parent()
    r = replay(parent, plan_ort(parent), {1: Kernel(frames=(frame,))})
    assert [(s.label, s.bytes) for s in r.samples] == [("pre", 1_000), ("cf", 1_300), ("cf/then/n0", 1_300)]
