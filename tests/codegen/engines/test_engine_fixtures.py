#!/usr/bin/env python3
"""Self-test of the engine fixtures and of engine_dispatch.py.

Each test pins a published behaviour of vLLM, SGLang or FlashInfer (see
/work/notes in the issue-38 research and README.md here) that a wrong replica
would not reproduce. Run from this folder with `python3 -m unittest` or as
`python3 test_engine_fixtures.py` (exit status non-zero on failure).
Standard library only.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import engine_dispatch as ed  # noqa: E402

FIX = os.path.join(HERE, "fixtures")
EX = os.path.join(HERE, "examples")
KiB = 1024
MiB = 1024 * 1024

VLLM_0_10_2 = os.path.join(FIX, "vllm-0.10.2")
VLLM_0_11_0 = os.path.join(FIX, "vllm-0.11.0")
VLLM_0_33_0 = os.path.join(FIX, "vllm-0.33.0")
S1 = os.path.join(FIX, "sglang-s1-0fbab45d")
S2 = os.path.join(FIX, "sglang-s2-09e7d8ed")
S3 = os.path.join(FIX, "sglang-s3-dict-configs")
S4 = os.path.join(FIX, "sglang-s4-two-shot-push")
FI_0_6_18 = os.path.join(FIX, "flashinfer-0.6.18")
FI_0_4_1 = os.path.join(FIX, "flashinfer-0.4.1")
SYMM_ON = {"VLLM_ALLREDUCE_USE_SYMM_MEM": "1"}
FI_OFF = {"VLLM_ALLREDUCE_USE_FLASHINFER": "0"}


def vq(ws, nbytes, cap="9.0", **kw):
    q = {"capability": cap, "world_size": ws, "nbytes": nbytes}
    q.update(kw)
    return q


def sq(arch, ws, nbytes, context="graph", **kw):
    q = {"arch": list(arch), "world_size": ws, "nbytes": nbytes, "context": context}
    q.update(kw)
    return q


def fq(ws, tokens, hidden=4096, **kw):
    q = {"world_size": ws, "token_num": tokens, "hidden": hidden, "dtype": "bfloat16",
         "use_oneshot": None}
    q.update(kw)
    return q


def answers(fixture, queries, generated=None, import_order="before", env=None):
    doc = ed.run(fixture, queries, generated=generated, import_order=import_order, env=env)
    return doc, doc["answers"]


def adapter_for(fixture, preimport=True):
    engine, _ = ed.load_fixture(fixture)
    adapter = ed.ADAPTERS[engine]()
    if preimport:
        adapter.preimport()
    return adapter


def paths(ans):
    return [a.get("path", a.get("algo", a.get("error"))) for a in ans]


class VllmTests(unittest.TestCase):
    def test_versions(self):
        for fixture, version in ((VLLM_0_10_2, "0.10.2"), (VLLM_0_11_0, "0.11.0"),
                                 (VLLM_0_33_0, "0.33.0")):
            doc, _ = answers(fixture, [])
            self.assertEqual(doc["engine"], "vllm")
            self.assertEqual(doc["engine_version"], version)

    def test_0_10_2_keyerror_for_capability_row_lacking_world_size(self):
        # 0.10.2 reads CUSTOM_ALL_REDUCE_MAX_SIZES[cap][world_size] without a
        # world-size guard; symm-mem is off by default there ("0").
        ad = adapter_for(VLLM_0_10_2)
        from vllm.distributed.device_communicators import all_reduce_utils

        all_reduce_utils.CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"] = {8: 1 * MiB}  # row without 2/4/6
        self.assertEqual(ad.answer(vq(4, 4096, env=SYMM_ON)),
                         {"error": "KeyError: 4", "stage": "construct"})
        ok = ad.answer(vq(4, 4096))  # default env: table never read
        self.assertEqual((ok["path"], ok["custom_max_size"]), ("custom", 8 * MiB))
        self.assertEqual(ad.answer(vq(8, 4096, env=SYMM_ON))["custom_max_size"], 1 * MiB)

    def test_0_11_0_keyerror_by_default(self):
        # 0.11.0: same unguarded read, symm-mem on by default.
        ad = adapter_for(VLLM_0_11_0)
        from vllm.distributed.device_communicators import all_reduce_utils

        all_reduce_utils.CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"] = {8: 1 * MiB}
        self.assertEqual(ad.answer(vq(6, 4096))["error"], "KeyError: 6")

    def test_0_33_0_guard_skips_missing_world_size(self):
        ad = adapter_for(VLLM_0_33_0)
        from vllm.distributed.device_communicators import all_reduce_utils

        all_reduce_utils.CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"] = {8: 1 * MiB}
        a = ad.answer(vq(4, 4096, env=FI_OFF))
        self.assertNotIn("error", a)
        self.assertEqual(a["custom_max_size"], 8 * MiB)

    def test_rebinding_has_no_effect_in_place_update_does(self):
        for fixture in (VLLM_0_10_2, VLLM_0_11_0, VLLM_0_33_0):
            with self.subTest(fixture=os.path.basename(fixture)):
                ad = adapter_for(fixture)  # custom_all_reduce.py already imported
                from vllm.distributed.device_communicators import all_reduce_utils

                q = vq(6, 4096, env=dict(SYMM_ON, **FI_OFF))
                self.assertEqual(ad.answer(q)["custom_max_size"], 512 * KiB)
                all_reduce_utils.CUSTOM_ALL_REDUCE_MAX_SIZES = {
                    "9.0": {2: 4096, 4: 4096, 6: 4096, 8: 4096}}
                self.assertEqual(ad.answer(q)["custom_max_size"], 512 * KiB)
                from vllm.distributed.device_communicators import custom_all_reduce

                custom_all_reduce.CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"].update({6: 4096})
                self.assertEqual(ad.answer(q)["custom_max_size"], 4096)

    def test_0_33_0_cap_9_0_default_dispatch_by_size(self):
        # notes/vllm.md 3e: FlashInfer on, torch symm-mem on, NCCL symm off; 2-D bf16.
        cases = [
            (2, 64 * MiB, "flashinfer"), (2, 64 * MiB + 16, "nccl"),
            (4, 2 * MiB, "flashinfer"), (4, 2 * MiB + 16, "custom"),
            (4, 8 * MiB - 16, "custom"), (4, 8 * MiB, "symm_mem"),
            (4, 32 * MiB, "symm_mem"), (4, 32 * MiB + 16, "nccl"),
            (6, 512 * KiB - 16, "custom"), (6, 512 * KiB, "symm_mem"),
            (6, 64 * MiB, "symm_mem"), (6, 64 * MiB + 16, "nccl"),
            (8, 16 * KiB, "flashinfer"), (8, 512 * KiB, "flashinfer"),
            (8, 512 * KiB + 16, "symm_mem"), (8, 64 * MiB, "symm_mem"),
            (8, 64 * MiB + 16, "nccl"),
        ]
        _, ans = answers(VLLM_0_33_0, [vq(ws, n) for ws, n, _ in cases])
        self.assertEqual(paths(ans), [p for _, _, p in cases])
        # ws 8: custom never runs (FlashInfer's 0.5 MB covers its 256 KiB).
        _, ans = answers(VLLM_0_33_0, [vq(8, n) for n in range(16, 600 * KiB, 16 * KiB)])
        self.assertNotIn("custom", paths(ans))

    def test_0_33_0_without_flashinfer_or_2d(self):
        qs = [vq(8, 256 * KiB - 16, env=FI_OFF), vq(8, 256 * KiB, env=FI_OFF),
              vq(8, 128 * KiB, ndim=1), vq(8, 1 * MiB, dtype="float16", env=FI_OFF),
              vq(8, 64 * KiB, env={"VLLM_USE_NCCL_SYMM_MEM": "1"}),
              vq(8, 64 * KiB, env={"VLLM_USE_NCCL_SYMM_MEM": "1", **FI_OFF})]
        _, ans = answers(VLLM_0_33_0, qs)
        self.assertEqual(paths(ans), ["custom", "symm_mem", "custom", "nccl", "flashinfer",
                                      "custom"])

    def test_symm_mem_bound_inclusive_in_0_33_strict_in_0_10_2(self):
        _, new = answers(VLLM_0_33_0, [vq(8, 64 * MiB, env=FI_OFF)])
        _, old = answers(VLLM_0_10_2, [vq(8, 64 * MiB, env=SYMM_ON), vq(8, 64 * MiB - 16, env=SYMM_ON)])
        self.assertEqual(paths(new), ["symm_mem"])
        self.assertEqual(paths(old), ["nccl", "symm_mem"])

    def test_custom_bound_is_min_table_8mib_and_ignored_without_symm_mem(self):
        for fixture, env in ((VLLM_0_10_2, SYMM_ON), (VLLM_0_11_0, {}), (VLLM_0_33_0, FI_OFF)):
            with self.subTest(fixture=os.path.basename(fixture)):
                ad = adapter_for(fixture)
                from vllm.distributed.device_communicators import all_reduce_utils

                all_reduce_utils.CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"].update({4: 64 * MiB, 8: 1 * MiB})
                self.assertEqual(ad.answer(vq(4, 4096, env=env))["custom_max_size"], 8 * MiB)
                self.assertEqual(ad.answer(vq(8, 4096, env=env))["custom_max_size"], 1 * MiB)
                off = [vq(8, 4096, env=dict(env, VLLM_ALLREDUCE_USE_SYMM_MEM="0")),
                       vq(8, 4096, env=env, multicast=False),
                       vq(8, 4096, cap="8.0", env=env)]
                for q in off:  # symm-mem down: the table is not read, 8 MiB stays
                    self.assertEqual(ad.answer(q)["custom_max_size"], 8 * MiB, q)

    def test_0_10_2_has_no_flashinfer_or_nccl_symm(self):
        _, ans = answers(VLLM_0_10_2, [vq(8, 64 * KiB, env={"VLLM_USE_NCCL_SYMM_MEM": "1"})])
        self.assertEqual(paths(ans), ["custom"])

    def test_examples(self):
        qs = [vq(4, 2 * MiB, env=FI_OFF), vq(8, 128 * KiB, env=FI_OFF)]
        for fixture, env in ((VLLM_0_10_2, SYMM_ON), (VLLM_0_11_0, {}), (VLLM_0_33_0, {})):
            for order in ("before", "after"):
                with self.subTest(fixture=os.path.basename(fixture), order=order):
                    doc, ans = answers(fixture, qs, os.path.join(EX, "vllm_h100_ok.py"), order, env)
                    self.assertIsNone(doc["install_error"])
                    self.assertEqual([a["custom_max_size"] for a in ans], [1 * MiB, 131072])
                    # 2 MiB and 128 KiB are at or above the new bounds (strict <)
                    self.assertEqual(paths(ans), ["symm_mem", "symm_mem"])
        # install twice = once
        ad = adapter_for(VLLM_0_33_0)
        mod = ed.load_generated(os.path.join(EX, "vllm_h100_ok.py"))
        mod.install()
        mod.install()
        self.assertEqual(ad.answer(vq(4, 4096, env=FI_OFF))["custom_max_size"], 1 * MiB)
        with self.assertRaisesRegex(RuntimeError, "0.10.1"):
            mod.check_version("0.10.1")
        with self.assertRaisesRegex(RuntimeError, "0.34.0"):
            mod.check_version("0.34.0")
        mod.check_version("0.11.0+cu128")

    def test_naive_rebind_example(self):
        g = os.path.join(EX, "vllm_naive_rebind.py")
        q = [vq(4, 4096), vq(8, 4096, env=FI_OFF)]
        # engine already imported: the rebinding does nothing
        _, ans = answers(VLLM_0_11_0, q, g, "before")
        self.assertEqual([a["custom_max_size"] for a in ans], [8 * MiB, 256 * KiB])
        # imported after install(): the short row raises KeyError before 0.33 ...
        _, ans = answers(VLLM_0_11_0, q, g, "after")
        self.assertEqual(ans[0]["error"], "KeyError: 4")
        # ... and 0.33 skips it, clamping 4294967297 to 8 MiB
        _, ans = answers(VLLM_0_33_0, q, g, "after")
        self.assertEqual([a["custom_max_size"] for a in ans], [8 * MiB, 8 * MiB])


class SglangTests(unittest.TestCase):
    OLD = os.path.join(EX, "sglang_old_style.py")
    OK = os.path.join(EX, "sglang_b200_ok.py")

    def test_defaults_s1(self):
        qs = [sq((9, 0), 8, 128 * KiB), sq((9, 0), 8, 256 * KiB), sq((9, 0), 8, 1 * MiB),
              sq((9, 0), 8, 1 * MiB, multicast=False), sq((9, 0), 8, 16 * MiB),
              sq((9, 0), 8, 16 * MiB + 16), sq((10, 0), 4, 2 * MiB), sq((10, 0), 4, 3 * MiB),
              sq((10, 0), 16, 1 * MiB), sq((9, 0), 8, 24)]
        _, ans = answers(S1, qs)
        self.assertEqual(paths(ans), ["1shot_push", "2shot_pull", "2shot_pull_mc", "2shot_pull",
                                      "2shot_pull_mc", "nccl", "1shot_push", "2shot_pull",
                                      "KeyError: 16", "nccl"])
        self.assertEqual(ans[0]["max_pull_size"], 16 * MiB)  # pull workspace cap

    def test_old_apply_on_s2_keeps_lamport_at_sm100_ws4(self):
        # B200 file says "never custom at ws 4" (crossover 0); S2's lamport band survives.
        sizes = [1 * MiB, int(1.125 * MiB), 2 * MiB, 4 * MiB, 8 * MiB, 8 * MiB + 16]
        doc, ans = answers(S2, [sq((10, 0), 4, n) for n in sizes], self.OLD)
        self.assertEqual(doc["install"], "ok")
        self.assertEqual(paths(ans), ["nccl", "2shot_lamport", "2shot_lamport", "2shot_lamport",
                                      "2shot_lamport", "nccl"])
        _, ans = answers(S2, [sq((10, 0), 4, n, "eager") for n in sizes], self.OLD)
        self.assertEqual(paths(ans), ["nccl", "nccl", "2shot_lamport", "2shot_lamport",
                                      "2shot_lamport", "nccl"])
        _, ans = answers(S2, [sq((10, 0), 4, n, c) for n in sizes for c in ("graph", "eager")],
                         self.OK)
        self.assertEqual(set(paths(ans)), {"nccl"})

    def test_s2_defaults_lamport_first(self):
        _, ans = answers(S2, [sq((10, 0), 4, 1 * MiB), sq((10, 0), 4, int(1.125 * MiB)),
                              sq((10, 0), 16, 128 * KiB), sq((9, 0), 16, 128 * KiB)])
        self.assertEqual(paths(ans), ["1shot_push", "2shot_lamport", "1shot_push", "KeyError: 16"])

    def test_old_install_attribute_error_on_s3_s4(self):
        for fixture in (S3, S4):
            with self.subTest(fixture=os.path.basename(fixture)):
                doc, ans = answers(fixture, [sq((10, 0), 4, 1 * MiB)], self.OLD)
                self.assertEqual(doc["install"], "error")
                self.assertRegex(doc["install_error"], r"^AttributeError: .*'_sm90_config'")

    def test_s4_two_shot_push_band_first(self):
        qs = [sq((10, 0), 4, 512 * KiB), sq((10, 0), 4, int(0.625 * MiB)), sq((10, 0), 4, 1 * MiB),
              sq((10, 0), 4, 16 * MiB), sq((10, 0), 4, 16 * MiB + 16),
              sq((10, 0), 8, 1 * MiB, "eager"), sq((10, 0), 8, 1 * MiB, "eager", multinode=True),
              sq((10, 0), 8, 4 * MiB, "eager", multinode=True),
              sq((10, 0), 8, 4 * MiB, "graph", multinode=True)]
        _, ans = answers(S4, qs)
        self.assertEqual(paths(ans), ["1shot_push", "2shot_push", "2shot_push", "2shot_push",
                                      "nccl", "2shot_pull_mc", "2shot_push", "2shot_push",
                                      "2shot_push"])
        self.assertFalse(ans[6]["multicast"])
        self.assertTrue(ans[7]["multicast"])   # two_shot_push_mc from 3.5 MiB
        self.assertFalse(ans[8]["graph"])      # multi-node forces eager
        # S3 (no band): the same sizes run 1shot_push / 2shot_pull
        _, ans = answers(S3, qs[:5])
        self.assertEqual(paths(ans), ["1shot_push", "1shot_push", "1shot_push", "2shot_pull",
                                      "nccl"])

    def test_s4_old_style_apply_leaves_two_shot_push(self):
        # An S1-style apply() wrapped around S4's get_all_reduce_config keeps the band.
        ad = adapter_for(S4)
        mod = ed.load_generated(self.OLD)
        from sglang.srt.distributed.device_communicators import custom_all_reduce_v2 as ca_v2
        from sglang.srt.distributed.device_communicators.configs import custom_all_reduce_v2 as cfg

        tuned = cfg.get_all_reduce_config

        def wrapped(world_size, multinode=False):
            c = tuned(world_size, multinode=multinode)
            return c._replace(graph=mod.apply(c.graph, "graph", world_size),
                              eager=mod.apply(c.eager, "eager", world_size))

        ca_v2.get_all_reduce_config = wrapped
        self.assertEqual(paths([ad.answer(sq((10, 0), 4, 4 * MiB))]), ["2shot_push"])

    def test_by_name_import(self):
        # ca_v2 binds get_all_reduce_config at import: rebinding only the configs
        # module attribute after that import changes nothing.
        ad = adapter_for(S3)
        from sglang.srt.distributed.device_communicators.configs import custom_all_reduce_v2 as cfg

        cfg.get_all_reduce_config = lambda ws: (_ for _ in ()).throw(AssertionError("unused"))
        self.assertEqual(paths([ad.answer(sq((10, 0), 4, 1 * MiB))]), ["1shot_push"])

    def test_ok_example_every_snapshot_both_import_orders(self):
        qs = ([sq((10, 0), 4, n, c) for n in (16, 1 * MiB, 4 * MiB, 12 * MiB) for c in ("graph", "eager")]
              + [sq((10, 0), 8, 1 * MiB, "eager"), sq((10, 0), 8, 1 * MiB + 16, "eager"),
                 sq((10, 0), 2, 8 * MiB), sq((10, 0), 2, 8 * MiB + 16),
                 sq((10, 0), 8, 4 * MiB, "eager", multinode=True)])
        want = ["nccl"] * 8 + ["custom", "nccl", "custom", "nccl", "nccl"]
        for fixture in (S1, S2, S3, S4):
            for order in ("before", "after"):
                with self.subTest(fixture=os.path.basename(fixture), order=order):
                    doc, ans = answers(fixture, qs, self.OK, order)
                    self.assertIsNone(doc["install_error"])
                    got = ["nccl" if p == "nccl" else "custom" for p in paths(ans)]
                    self.assertEqual(got, want)
        # another arch is left alone; arch switches within one run are honoured
        _, ans = answers(S4, [sq((10, 0), 4, 1 * MiB), sq((9, 0), 4, 256 * KiB),
                              sq((10, 7), 4, 1 * MiB), sq((10, 0), 4, 1 * MiB)], self.OK)
        self.assertEqual(paths(ans), ["nccl", "1shot_push", "1shot_push", "nccl"])

    def test_ok_example_install_twice_and_unknown_shape(self):
        ad = adapter_for(S4)
        mod = ed.load_generated(self.OK)
        mod.install()
        mod.install()
        self.assertEqual(paths([ad.answer(sq((10, 0), 8, 1 * MiB + 16, "eager"))]), ["nccl"])
        self.assertEqual(paths([ad.answer(sq((10, 0), 8, 1 * MiB, "eager"))]), ["2shot_pull_mc"])
        from sglang.srt.distributed.device_communicators.configs import custom_all_reduce_v2 as cfg

        del cfg._sm90_configs
        with self.assertRaisesRegex(RuntimeError, "unknown custom_all_reduce_v2 configs shape"):
            mod.install()
        with self.assertRaisesRegex(RuntimeError, "s9-future"):
            mod.check_version("s9-future")


class FlashinferTests(unittest.TestCase):
    def test_versions(self):
        self.assertEqual(answers(FI_0_6_18, [])[0]["engine_version"], "0.6.18")
        self.assertEqual(answers(FI_0_4_1, [])[0]["engine_version"], "0.4.1")

    def test_defaults_0_6_18(self):
        qs = [fq(8, 4), fq(2, 16384), fq(2, 16385), fq(8, 8192, 16384, use_oneshot=True),
              fq(16, 4), fq(16, 4, use_oneshot=True), fq(8, 8, use_oneshot=False),
              fq(8, 9, use_oneshot=False), fq(8, 4, 4100)]
        _, ans = answers(FI_0_6_18, qs)
        self.assertEqual(paths(ans), [
            "oneshot", "oneshot", "twoshot", "twoshot", "KeyError: 16", "oneshot",
            "AssertionError: sequence length should be larger than tp_size", "twoshot",
            "RuntimeError: params.hidden_dim % VEC_SIZE != 0"])

    def test_zero_threshold_asserts_at_token_num_le_ws(self):
        g = os.path.join(EX, "flashinfer_old_zero.py")
        doc, ans = answers(FI_0_6_18, [fq(8, t) for t in range(1, 11)] + [fq(16, 4)], g)
        self.assertEqual(doc["install"], "ok")
        err = "AssertionError: sequence length should be larger than tp_size"
        self.assertEqual(paths(ans), [err] * 8 + ["twoshot", "twoshot", "KeyError: 16"])

    def test_ok_example(self):
        g = os.path.join(EX, "flashinfer_b200_ok.py")
        qs = [fq(ws, t, h) for ws in (2, 4, 8, 16) for t in range(1, ws + 1)
              for h in (1024, 4096, 8192, 16384, 65536)]
        doc, ans = answers(FI_0_6_18, qs, g)
        self.assertIsNone(doc["install_error"])
        self.assertEqual(set(paths(ans)), {"oneshot"})
        doc, _ = answers(FI_0_4_1, [], g)
        self.assertRegex(doc["install_error"], r"^RuntimeError: .*FlashInfer 0\.4\.1 ")

    def test_0_4_1_ignores_the_dict(self):
        ad = adapter_for(FI_0_4_1)
        from flashinfer.comm import trtllm_ar

        self.assertFalse(hasattr(trtllm_ar, "_use_oneshot_heuristics"))
        trtllm_ar._use_oneshot_heuristics = {2: 0.0, 4: 0.0, 8: 0.0}
        got = paths([ad.answer(q) for q in (fq(8, 4), fq(8, 128), fq(8, 129), fq(16, 4))])
        self.assertEqual(got, ["oneshot", "oneshot", "twoshot", "oneshot"])
        doc, _ = answers(FI_0_4_1, [], os.path.join(EX, "flashinfer_old_zero.py"))
        self.assertRegex(doc["install_error"], r"^AttributeError: .*_use_oneshot_heuristics")

    def test_mnnvl_never_reads_the_dict(self):
        g = os.path.join(EX, "flashinfer_old_zero.py")
        _, ans = answers(FI_0_6_18, [fq(8, 4, backend="mnnvl"), fq(8, 64, backend="mnnvl")], g)
        self.assertEqual(paths(ans), ["oneshot", "twoshot"])


PROBE_PLUGIN = """
calls = []


def ok():
    calls.append("ok")


def fail():
    raise RuntimeError("probe plugin failed")


def leave():
    raise SystemExit("probe plugin exits")
"""


class PluginLoaderTests(unittest.TestCase):
    """vLLM's and SGLang's entry-point loaders, through which arfit's engine plugins run (python/arfit/plugins)."""

    def run_loader(self, fixture, entry_points, code, env=None):
        """`code` in a fresh Python with `fixture` and a distribution declaring `entry_points` (the text of its
        entry_points.txt) over the module probe_plugin on PYTHONPATH."""
        with tempfile.TemporaryDirectory() as site:
            with open(os.path.join(site, "probe_plugin.py"), "w") as f:
                f.write(PROBE_PLUGIN)
            info = os.path.join(site, "probe-0.0.0.dist-info")
            os.mkdir(info)
            with open(os.path.join(info, "METADATA"), "w") as f:
                f.write("Metadata-Version: 2.1\nName: probe\nVersion: 0.0.0\n")
            with open(os.path.join(info, "entry_points.txt"), "w") as f:
                f.write(entry_points)
            clean = {k: v for k, v in os.environ.items()
                     if k not in ("PYTHONPATH", "VLLM_PLUGINS", "SGLANG_PLUGINS", "SGLANG_PLATFORM")}
            clean.update(env or {}, PYTHONPATH=os.pathsep.join([fixture, site]))
            return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean,
                                  timeout=120)

    VLLM_LOAD_TWICE = ("from vllm.plugins import load_general_plugins\nimport probe_plugin\n"
                       "load_general_plugins()\nload_general_plugins()\nprint(probe_plugin.calls)\n")

    def test_vllm_calls_each_plugin_once_and_logs_load_errors(self):
        for fixture in (VLLM_0_10_2, VLLM_0_33_0):
            r = self.run_loader(fixture, "[vllm.general_plugins]\ngood = probe_plugin:ok\n"
                                "broken = probe_no_such_module:ok\n", self.VLLM_LOAD_TWICE)
            self.assertEqual((r.returncode, r.stdout.strip()), (0, "['ok']"), r.stderr)
            self.assertIn("Failed to load plugin broken", r.stderr)

    def test_vllm_plugins_names_what_loads(self):
        declared = "[vllm.general_plugins]\ngood = probe_plugin:ok\n"
        for value, calls in (("", "[]"), ("other", "[]"), ("other,good", "['ok']")):
            r = self.run_loader(VLLM_0_33_0, declared, self.VLLM_LOAD_TWICE, {"VLLM_PLUGINS": value})
            self.assertEqual((r.returncode, r.stdout.strip()), (0, calls), (value, r.stderr))

    def test_vllm_lets_a_plugin_call_error_through(self):
        for fixture in (VLLM_0_10_2, VLLM_0_33_0):
            r = self.run_loader(fixture, "[vllm.general_plugins]\nbad = probe_plugin:fail\n", self.VLLM_LOAD_TWICE)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("RuntimeError: probe plugin failed", r.stderr)

    SGLANG_LOAD_TWICE = ("from sglang.srt.plugins import load_plugins\nimport probe_plugin\n"
                         "load_plugins()\nload_plugins()\nprint(probe_plugin.calls)\n")

    def test_sglang_swallows_a_plugin_exception_but_not_system_exit(self):
        r = self.run_loader(S4, "[sglang.srt.plugins]\nbad = probe_plugin:fail\ngood = probe_plugin:ok\n",
                            self.SGLANG_LOAD_TWICE)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "['ok']"), r.stderr)
        self.assertIn("Failed to execute general plugin: bad", r.stderr)
        r = self.run_loader(S4, "[sglang.srt.plugins]\nleave = probe_plugin:leave\n", self.SGLANG_LOAD_TWICE)
        self.assertEqual((r.returncode, r.stdout.strip()), (1, ""))
        self.assertIn("probe plugin exits", r.stderr)

    def test_sglang_plugins_allow_list(self):
        declared = "[sglang.srt.plugins]\nleave = probe_plugin:leave\ngood = probe_plugin:ok\n"
        for value, calls in (("good", "['ok']"), (" good , other", "['ok']"), ("other", "[]")):
            r = self.run_loader(S4, declared, self.SGLANG_LOAD_TWICE, {"SGLANG_PLUGINS": value})
            self.assertEqual((r.returncode, r.stdout.strip()), (0, calls), (value, r.stderr))


class HarnessTests(unittest.TestCase):
    def run_cli(self, *args, stdin=None):
        return subprocess.run([sys.executable, os.path.join(HERE, "engine_dispatch.py"), *args],
                              input=stdin, capture_output=True, text=True, timeout=120)

    def test_cli_end_to_end_and_speed(self):
        qs = [vq(ws, n) for ws in (2, 4, 6, 8) for n in range(16, 64 * MiB, 64 * KiB)]
        self.assertGreater(len(qs), 4000)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"queries": qs}, f)
        try:
            r = self.run_cli("--fixture", VLLM_0_33_0, "--generated",
                             os.path.join(EX, "vllm_h100_ok.py"), "--queries", f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["install"], "ok")
        self.assertEqual(len(doc["answers"]), len(qs))

    def test_cli_install_error_and_exit_codes(self):
        q = json.dumps([sq((10, 0), 4, 1 * MiB)])
        old = os.path.join(EX, "sglang_old_style.py")
        r = self.run_cli("--fixture", S3, "--generated", old, "--queries", "-", stdin=q)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(json.loads(r.stdout)["install_error"].startswith("AttributeError: "))
        r = self.run_cli("--fixture", S3, "--generated", old, "--queries", "-",
                         "--fail-on-install-error", stdin=q)
        self.assertEqual(r.returncode, 1)
        r = self.run_cli("--fixture", FIX, "--queries", "-", stdin=q)
        self.assertEqual(r.returncode, 2)
        r = self.run_cli("--fixture", S3, "--queries", "-", stdin="{\"x\": 1}")
        self.assertEqual(r.returncode, 2)

    def test_import_time_env(self):
        # SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB is read when ca_v2 is imported.
        doc = ed.run(S1, [sq((9, 0), 8, 4 * MiB)], env={"SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB": "2048"})
        self.assertEqual(paths(doc["answers"]), ["nccl"])
        self.assertEqual(doc["answers"][0]["max_pull_size"], 2 * MiB)

    def test_every_fixture_file_names_its_source(self):
        repos = {"vllm": "vllm-project/vllm", "sglang": "sgl-project/sglang",
                 "flashinfer": "flashinfer-ai/flashinfer"}
        for root in os.listdir(FIX):
            for dirpath, _, files in os.walk(os.path.join(FIX, root)):
                for name in files:
                    if not name.endswith(".py"):
                        continue
                    with open(os.path.join(dirpath, name)) as f:
                        head = "".join(f.readlines()[:3])
                    self.assertTrue(head.startswith("# arfit test fixture"), (dirpath, name))
                    if name != "_fixture.py":
                        self.assertIn(repos[root.split("-")[0]], head, (dirpath, name))


if __name__ == "__main__":
    unittest.main()
