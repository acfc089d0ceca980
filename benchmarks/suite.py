"""The replication suites: which benchmark scripts run, at which scale, against which claim.

A :class:`Benchmark` names a script of this folder, the arguments that set its
scale in a suite, and what the paper reports. :mod:`benchmarks.run` runs the
entries of ``SUITES[suite]``; each writes ``results/<suite>/<name>.json``
(``name`` is the stem the script writes under ``--out``), from which
:mod:`benchmarks.report` builds ``REPORT.md``.

Scale of the CPU suite: every entry is sized to run in at most ~30 minutes on
2 CPU cores (two processes of one core each where the runs can be split).
Training entries use the shared CIFAR-10 training split with their own
stratified held-out 10% (seed 0) and 3 seeds. Where a paper's batch is too
large for a few hundred CPU steps, the entry takes a smaller batch and says so.

The selection entry cannot be split across processes (every student reads the
teacher it trains first), so it runs as one process with every core.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TRAIN_SEEDS = ("--seeds", "0", "1", "2")


@dataclass(frozen=True)
class Benchmark:
    """One entry of a suite.

    Attributes:
        name: the results stem: the script writes ``<out>/<name>.json`` / ``.md``.
        script: the file in ``benchmarks/`` that measures it.
        args: the script's arguments in this suite (``--out`` and ``--shard``
            are added by the runner).
        title: what is measured, one line.
        paper: the paper's number or statement this is compared with.
        minutes: expected wall time on 2 cores (a guide for ``--list``).
        run_key: fields of one entry of ``data["runs"]`` that identify a run;
            ``None`` for benchmarks whose runs cannot be split across processes
            (timings, which need the machine to themselves).
        eval_data: whether the script takes ``--eval-data`` (an external set
            every trained model is also evaluated on).
        more_args: further invocations of the script, run after ``args`` into
            the same results file (same ``--out``, sharded the same way): runs
            a single argument list cannot plan, e.g. another model or a longer
            budget for a subset of the variants. Their configuration must
            match ``args``'s.
    """

    name: str
    script: str
    args: tuple = ()
    title: str = ""
    paper: str = ""
    minutes: float = 30.0
    run_key: tuple | None = None
    eval_data: bool = False
    figures: tuple = field(default=())
    more_args: tuple = field(default=())

    @property
    def invocations(self):
        """The argument lists the runner runs, in order: ``args``, then each of ``more_args``."""
        return (tuple(self.args), *(tuple(a) for a in self.more_args))


# ConvMixer-128/6 (k = 9 unless swept, patch 2), no RandAugment, 2,000 held-out images. The sigma
# entry trains on 4,000 images at batch 128; the kernel-size and convergence entries, with four
# kernel sizes or three budgets, on 2,000 images at batch 64: the same number of steps (62 in
# 2 epochs) for half the compute, which keeps them near 30 minutes.
COV_MODEL = ("--backend", "torch", "--dim", "128", "--depth", "6")
COV_SIGMA = (*COV_MODEL, "--train-size", "4000", "--batch-size", "128", "--held-out-size", "2000")
COV_SMALL = (*COV_MODEL, "--train-size", "2000", "--batch-size", "64", "--held-out-size", "2000")
COV_KEY = ("init", "frozen", "kernel_size", "epochs", "seed")
# Mimetic: 3,000 images, batch 64 with AdamW's lr scaled by sqrt(64/512) from the paper's 0.01.
MIMETIC_CPU = ("--backend", "torch", "--train-size", "3000", "--batch-size", "64", "--lr", "0.0035",
               "--held-out-size", "2000", *TRAIN_SEEDS)
PATCH_KERNEL_CPU = ("--backend", "torch", "--dim", "64", "--depth", "4", "--train-size", "2000",
                    "--epochs", "2", "--source-epochs", "10", "--batch-size", "128", "--held-out-size",
                    "2000", "--frozen", "frozen", *TRAIN_SEEDS)
LC_RECIPE_CPU = ("--train-size", "2000", "--epochs", "3", "--batch-size", "64", "--held-out-size", "2000")

CPU = (
    Benchmark(
        name="lc_accuracy_fig1",
        script="lc_accuracy.py",
        args=("fig1", "--backend", "torch", "--expansions", "1", "4", "8", *LC_RECIPE_CPU, *TRAIN_SEEDS),
        title="LC blocks: LCResNet-20-16xE, frozen random vs learnable spatial filters (Fig. 1)",
        paper="the frozen gap shrinks as E grows, break-even near E = 8 (75 epochs); "
              "E = 128: 91.89 ± 0.10 % frozen vs 91.39 ± 0.29 % learnable",
        minutes=30,
        run_key=("model", "frozen", "seed"),
        eval_data=True,
        figures=("lc_gap",),
    ),
    Benchmark(
        name="lc_accuracy_fig3",
        script="lc_accuracy.py",
        args=("fig3", "--backend", "torch", *LC_RECIPE_CPU, *TRAIN_SEEDS),
        title="LC blocks: freezing every spatial conv of networks with and without 1x1 convs (Fig. 3)",
        paper="networks without 1x1 convs lose >= 16 points when frozen, networks with them < 2",
        minutes=30,
        run_key=("model", "frozen", "seed"),
        eval_data=True,
    ),
    Benchmark(
        name="mimetic_sweep",
        script="mimetic_sweep.py",
        args=("--models", "convnext", "--b-values", "0", "0.05", "0.1", "0.2", "--combo-b", "0.05",
              "--epochs", "2", *MIMETIC_CPU),
        # The depth-8 tiny ViT at the same budget, and ConvNeXt's baseline, best b, ConvCovariance
        # and the combination as complete runs of twice the budget (does the gain fade?).
        more_args=(("--models", "vit", "--b-values", "0", "0.05", "0.2", "--epochs", "2", *MIMETIC_CPU),
                   ("--models", "convnext", "--b-values", "0", "0.2", "--combo-b", "0.05", "--epochs", "4",
                    "--only", "mean-shift:0", "mean-shift:0.2", "conv-cov", "conv-cov+mean-shift:0.05",
                    *MIMETIC_CPU)),
        title="Mimetic MLP init: the mean shift b on isotropic ConvNeXt, with ConvCovariance (Fig. 2/4)",
        paper="a wide range of b > 0 beats b = 0 at short training; mean shift + ConvCovariance "
              "beats either alone",
        minutes=85,
        run_key=("model", "variant", "epochs", "seed"),
        eval_data=True,
        figures=("mimetic_b",),
    ),
    Benchmark(
        name="alignment_accuracy",
        script="alignment_accuracy.py",
        args=("--backend", "torch", "--variants", "default", "aligned_2", "smallest_1", *TRAIN_SEEDS),
        title="Data-aligned init: SimpleCNN with 0 / 2 aligned layers and the smallest-eigenvector "
              "control, 100 and 1000 SGD iterations (Tables 2 and 5)",
        paper="test accuracy @100 / @1000: default .31 / .53, 2 aligned layers .37 / .56; "
              "smallest eigenvectors .15 @100",
        minutes=34,
        run_key=("variant", "seed", "iterations"),
        eval_data=True,
    ),
    Benchmark(
        name="covariance_kernel_size",
        script="covariance_accuracy.py",
        args=("kernel-size", *COV_SMALL, "--epochs", "2", *TRAIN_SEEDS),
        title="ConvCovariance's gain vs kernel size, frozen and thawed ConvMixer (Table 10)",
        paper="gain at 20 epochs, frozen / thawed: k=3 -0.05 / -0.05, k=7 +3.49 / +1.13, "
              "k=9 +5.59 / +1.59, k=15 +8.39 / +3.69 points",
        minutes=32,
        run_key=COV_KEY,
        eval_data=True,
        figures=("covariance_kernel",),
    ),
    Benchmark(
        name="covariance_convergence",
        script="covariance_accuracy.py",
        args=("convergence", *COV_SMALL, "--budgets", "1", "2", "4", *TRAIN_SEEDS),
        title="ConvCovariance vs default init at several budgets, each a complete run (Fig. 8)",
        paper="ConvCovariance converges faster; the gap is largest for short budgets",
        minutes=28,
        run_key=COV_KEY,
        eval_data=True,
        figures=("covariance_budget",),
    ),
    Benchmark(
        name="covariance_sigma",
        script="covariance_accuracy.py",
        args=("sigma", *COV_SIGMA, "--epochs", "2", *TRAIN_SEEDS),
        title="Gaussian width convention: Eq. 5's exp(-d^2/(2 sigma)) vs the listing's exp(-d^2/sigma)",
        paper="Eq. 5 is the text's definition; the listing (Fig. 15) divides by sigma",
        minutes=32,
        run_key=COV_KEY,
        eval_data=True,
    ),
    Benchmark(
        name="covariance_transfer_groups",
        script="covariance_transfer.py",
        args=("groups", *COV_MODEL, "--train-size", "2000", "--batch-size", "128", "--epochs", "2",
              "--source-epochs", "5", "--held-out-size", "2000", "--frozen", "both", *TRAIN_SEEDS),
        title="Covariance transfer, the five groups of Fig. 3: A default, B transfer from a same-width "
              "source, C from a 1/8-width source (both with the filter mean), D direct filter transfer, "
              "E ConvCovariance; frozen and thawed ConvMixer-128/6 (k 9, patch 2)",
        paper="ConvMixer-256/8, 20 epochs: B and C beat A, C close to B, E meets or exceeds them; "
              "A -> E 84.97 -> 90.56 % frozen, 89.26 -> 90.85 % thawed",
        minutes=32,
        run_key=("group", "frozen", "epochs", "seed"),
        eval_data=True,
        figures=("transfer_groups",),
    ),
    Benchmark(
        name="covariance_transfer_patch_kernel",
        script="covariance_transfer.py",
        # One source (ConvMixer-64/4, patch 2, k 9) into targets of patch 1, 2, 4 at k 9 and k 5 at
        # patch 2, frozen; narrower than the other covariance entries: patch 1 costs ~4x patch 2.
        args=("patch-kernel", *PATCH_KERNEL_CPU, "--target-patch-sizes", "1", "2", "4",
              "--target-kernel-sizes", "9"),
        # k 5 also with the consistent resizes (FilterCovariance.resized's crop and interpolate).
        more_args=tuple(("patch-kernel", *PATCH_KERNEL_CPU, "--target-patch-sizes", "2",
                         "--target-kernel-sizes", "5", "--resize", resize)
                        for resize in ("blocks", "crop", "interpolate")),
        title="Covariance transfer across patch and kernel sizes (Fig. 9): a bank recorded at patch 2, "
              "k 9, resized, into frozen ConvMixers of other patch and kernel sizes",
        paper="covariances learned at one patch and kernel size initialize ConvMixers of other patch "
              "and kernel sizes better than the default init",
        minutes=27,
        run_key=("init", "frozen", "target", "epochs", "seed"),
        eval_data=True,
    ),
    Benchmark(
        name="lc_speed",
        script="lc_speed.py",
        args=(),
        title="LC blocks: step time, memory and checkpoint size of LCResNet-20-16x{8,128}, "
              "every backend (Table 3)",
        paper="A100, E = 128, batch 64: fwd+bwd 124 -> 82.3 ms when frozen (1.51x); checkpoints "
              "146.66 / 33.84 / 17.74 MiB (baseline / global / recycled sharing)",
        minutes=18,
    ),
    Benchmark(
        name="selection_accuracy",
        script="selection_accuracy.py",
        # One process (the teacher is trained first, then every student reads it): ViT-384/6 teacher,
        # 2 epochs on 20,000 images; ViT-192/3 students, 10 epochs on 3,000 images (patch 8).
        args=("--backend", "torch", "--teacher-train-size", "20000", "--teacher-epochs", "2",
              "--student-train-size", "3000", "--variants", "random_init", "uniform", "consecutive",
              "random_inconsistent", "distill", "uniform+distill", *TRAIN_SEEDS),
        title="Weight selection into a half-width ViT student from a ViT teacher trained here: element "
              "selection methods, consistency, the linear probe at init, logit distillation "
              "(Tables 1, 3, 9 and Sec. 5.4)",
        paper="ViT-T on CIFAR-100 from ImageNet-21K ViT-S: random 72.3 -> selection 81.4 %; without "
              "consistency 77.4; linear probe at init 13.5 -> 28.2; distillation 78.4, selection + "
              "distillation 83.9",
        minutes=35,
        eval_data=True,
        figures=("selection_methods",),
    ),
    # Speed: timing entries run alone (no run_key), every backend in one entry.
    Benchmark(
        name="depthwise_speed",
        script="depthwise_speed.py",
        args=("--all-backends",),
        title="Depthwise convolution and ConvMixer-128/6 (k = 9) train step, thawed and frozen, "
              "every backend",
        paper="no timing in the covariance paper; frozen depthwise filters skip their gradient, so a "
              "frozen step should be faster",
        minutes=15,
    ),
    Benchmark(
        name="init_cost",
        script="init_cost.py",
        args=("--all-backends",),
        title="Initialization cost: ConvCovariance of ConvMixer-1536/24's depthwise kernels vs the "
              "paper's multivariate_normal sampling",
        paper="no number in the paper (its listing samples each layer with numpy's SVD-based "
              "multivariate_normal)",
        minutes=3,
    ),
    Benchmark(
        name="selection_speed",
        script="selection_speed.py",
        args=("--all-backends",),
        title="Initialization cost: weight selection from a ViT-B-sized teacher into a ViT-T",
        paper="no number in the paper; the package's goal: < 5 s and < 1.5x the teacher's weights",
        minutes=3,
    ),
    Benchmark(
        name="alignment_cost",
        script="alignment_cost.py",
        args=("--all-backends", "--repeats", "2"),
        title="Initialization cost: patch covariance of the 50,000 CIFAR-10 training images, and "
              "data-aligned init of a SimpleCNN's first two layers",
        paper="no number in the paper (App. D.1 gives the spectrum: about 12.3, 1.45, 1.18, 1.06)",
        minutes=20,
    ),
)

# The GPU suite: the papers' own scales (full 45,000-image training split, their epochs and
# batches), one process at a time on the one accelerator, the backend of KERAS_BACKEND.
GPU = (
    Benchmark(
        name="covariance_kernel_size",
        script="covariance_accuracy.py",
        args=("kernel-size", "--dim", "256", "--depth", "8", "--kernel-sizes", "3", "7", "9", "15",
              "--epochs", "20", "--train-size", "45000", "--batch-size", "512", "--rand-augment",
              *TRAIN_SEEDS),
        title="ConvCovariance on ConvMixer-256/8 (patch 2), k = 3..15, 20 epochs, frozen and thawed "
              "(Fig. 3's headline at k = 9, Table 10)",
        paper="k = 9: 84.97 -> 90.56 % frozen, 89.26 -> 90.85 % thawed; Table 10 gains as in the CPU suite",
        minutes=8 * 60,
        run_key=COV_KEY,
        eval_data=True,
        figures=("covariance_kernel",),
    ),
    Benchmark(
        name="lc_accuracy_fig1",
        script="lc_accuracy.py",
        args=("fig1", "--expansions", "1", "2", "4", "8", "16", "32", "64", "128",
              "--train-size", "45000", "--epochs", "75", *TRAIN_SEEDS),
        title="LC blocks: LCResNet-20-16xE, E = 1..128, the paper's recipe and budget (Fig. 1)",
        paper="E = 128: 91.89 ± 0.10 % frozen vs 91.39 ± 0.29 % learnable; break-even near E = 8",
        minutes=24 * 60,
        run_key=("model", "frozen", "seed"),
        eval_data=True,
        figures=("lc_gap",),
    ),
    Benchmark(
        name="mimetic_sweep",
        script="mimetic_sweep.py",
        args=("--dim", "256", "--vit-dim", "192", "--train-size", "45000", "--batch-size", "512",
              "--lr", "0.01", "--epochs", "5", "20", *TRAIN_SEEDS),
        title="Mimetic MLP init at the paper's widths: ConvNeXt-256/8 and the depth-8 tiny ViT",
        paper="b > 0 beats b = 0 at short training, fading with longer training on ConvNeXt",
        minutes=12 * 60,
        run_key=("model", "variant", "epochs", "seed"),
        eval_data=True,
        figures=("mimetic_b",),
    ),
    Benchmark(
        name="selection_accuracy",
        script="selection_accuracy.py",
        # ViT-S-shaped teacher (384/12/6) trained here, ViT-T students (192/12/3), patch 4 on 32x32,
        # both 100 epochs on the 45,000 training images, the paper's batch 512 and lr 2e-3.
        args=("--patch-size", "4", "--student-depth", "12", "--teacher-depth", "12", "--teacher-epochs",
              "100", "--student-epochs", "100", "--student-train-size", "45000", "--batch-size", "512",
              "--lr", "0.002", "--variants", "random_init", "uniform", "consecutive", "random",
              "random_inconsistent", "uniform_layers", "distill", "uniform+distill", *TRAIN_SEEDS),
        title="Weight selection ViT-S -> ViT-T on CIFAR-10, teacher trained here (Tables 1, 3, 9; Sec. 5.4)",
        paper="ViT-T on CIFAR-100 from ImageNet-21K ViT-S: random 72.3 -> selection 81.4 %; without "
              "consistency 77.4; distillation 78.4, selection + distillation 83.9",
        minutes=10 * 60,
        eval_data=True,
        figures=("selection_methods",),
    ),
    Benchmark(
        name="lc_speed",
        script="lc_speed.py",
        args=("--expansions", "8", "128", "--batch-sizes", "64", "64"),
        title="LC blocks: step time, memory and checkpoint size of LCResNet-20-16x{8,128} (Table 3)",
        paper="A100, E = 128, batch 64: fwd+bwd 124 -> 82.3 ms when frozen",
        minutes=15,
    ),
)

SUITES = {"cpu": CPU, "gpu": GPU}
# Processes per splittable benchmark unless --jobs says otherwise (None: one per CPU core).
DEFAULT_JOBS = {"cpu": None, "gpu": 1}
