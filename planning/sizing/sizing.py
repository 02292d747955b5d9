"""Workload sizing: what a training run needs in compute, memory, network, storage, host and power.

Plain Python over plain data: ``size(workload, gpus)`` takes a :class:`Workload` and the GPU catalog as
:class:`GPU` records (``catalog_gpus()`` reads them from ``inventory.GPUModel``, the only Django in this
module) and returns a :class:`Sizing`, every figure with its value, unit, a one-line explanation and the
formula's source. ``compare_all`` sizes the same workload on every GPU model.

The formulas follow public references:

* EleutherAI, "Transformer Math 101" (Anthony, Biderman, Schoelkopf, 2023): training compute
  C = 6·N·D FLOPs (N parameters, D tokens), time = C / (GPUs × peak × utilisation), and memory for
  mixed-precision AdamW: 2 bytes bf16 weights + 2 bytes bf16 gradients + 12 bytes optimizer state (fp32
  master copy, momentum, variance) = 16 bytes per parameter (18 with fp32 gradients), divided over the GPUs
  when the state is sharded (ZeRO-3, Rajbhandari et al. 2020); bf16 inference: 2 bytes per parameter plus the
  KV cache.
* Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM":
  parameters ≈ 12·L·h² for L layers of hidden size h, the 6·N·D count (8·N·D with activation
  recomputation, which model FLOPs utilisation (MFU) excludes) and achieved utilisation of 40-50 % of peak at
  scale. Activation memory with full recomputation follows Korthikanti et al.
  2022 ("Reducing Activation Recomputation in Large Transformer Models", Megatron-LM): each layer keeps its
  input (2·s·h bytes) and one layer at a time is recomputed (≈ 34·s·h bytes, flash attention, micro-batch 1).
* Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models" (Chinchilla): a compute-optimal run
  sees about 20 tokens per parameter.
* The default MFU and goodput are calibrated on published training runs (``default_mfu``, ``default_goodput``
  below; ``bench/sizing_accuracy.py`` measures how close they come to the published GPU-hours in sample,
  ``planning.calibration.validation`` out of sample too). The goodput uses the fleet's measured interruption rate
  instead of the published one once it rests on enough interruptions (``rates``).

Gradient synchronisation is a ring all-reduce: each GPU sends and receives 2·(n−1)/n × the gradient bytes
per step (Patarasuk and Yuan 2009; the "bus bandwidth" of NCCL's tests), and the node's network links are the
slowest part of the ring once it spans nodes.

Stated assumptions (module constants below): 8 GPUs per node; 10 % of GPU memory kept for the framework
and fragmentation; gradient sync may take 20 % of step time; checkpoints written within 5 minutes; 8 CPU
cores and 2× the GPU's memory in host RAM per GPU for data loading; a model's shape has h / L = 128; tokenised
data at 4 bytes per token unless the dataset size says otherwise; power is GPU TDP × GPUs × PUE (default 1.3).
"""

import math
from dataclasses import dataclass, field, fields, replace

from .rates import MeasuredRate  # noqa: F401 (planning.goodput builds it as sizing.MeasuredRate)

DEFAULT_PUE = 1.3
PRECISIONS = {"bf16": "BF16", "fp8": "FP8"}

GPUS_PER_NODE = 8  # HGX / DGX / OAM baseboards; fit_class "single_node" means up to this many, over NVLink
USABLE_MEMORY_SHARE = 0.9  # the rest: CUDA context, framework buffers, fragmentation
TRAIN_BYTES_PER_PARAM = 16  # bf16 weights 2 + bf16 gradients 2 + fp32 master, momentum, variance 12
INFERENCE_BYTES_PER_PARAM = 2  # bf16 weights
CHECKPOINT_BYTES_PER_PARAM = 14  # bf16 weights 2 + fp32 master, momentum, variance 12 (gradients not saved)
GRADIENT_BYTES_PER_PARAM = 2  # bf16 gradients, all-reduced every step
SYNC_SHARE = 0.20  # gradient synchronisation may take this share of a step (the rest overlaps or computes)
CHECKPOINT_WRITE_SECONDS = 300  # save a checkpoint within 5 minutes
DEFAULT_BYTES_PER_TOKEN = 4  # tokenised data, one uint32 per token
CPU_CORES_PER_GPU = 8  # data-loader workers, the training process and the framework's threads
HOST_RAM_PER_GPU_MEMORY = 2  # host RAM per GPU = 2 × its memory (pinned buffers, page cache, checkpoint staging)
ASPECT_RATIO = 128  # hidden size / layers (LLaMA 7B: 4096 / 32)
CHINCHILLA_TOKENS_PER_PARAM = 20
MAX_GPUS = 1_000_000  # the most GPUs a run may be sized on

T101 = 'EleutherAI, "Transformer Math 101" (2023)'
MEGATRON = "Narayanan et al. 2021 (Megatron-LM)"
ACTIVATIONS = "Korthikanti et al. 2022 (Megatron-LM activation recomputation)"
ZERO = T101 + "; Rajbhandari et al. 2020 (ZeRO-3)"
RING = "Ring all-reduce (Patarasuk & Yuan 2009; NCCL bus bandwidth)"
CHINCHILLA = "Hoffmann et al. 2022 (Chinchilla)"
RULE = "Rule of thumb (stated in the module)"


def _input(label, help_text, kind="float", minimum=0, maximum=None, inclusive=False, choices=None):
    """Metadata of a workload input; the page's form and the API serializer are built from it. Values must be above
    ``minimum`` (or equal to it when ``inclusive``) and at most ``maximum``."""
    return {"label": label, "help": help_text, "kind": kind, "min": minimum, "max": maximum,
            "inclusive": inclusive, "choices": choices}


@dataclass(frozen=True)
class Workload:
    """A training run to size. ``None`` means "not given"; limits are enforced by :func:`validate`."""

    params_billion: float = field(metadata=_input(
        "Parameters (billion)", "Total parameters, all experts of a mixture-of-experts model included.",
        maximum=100_000))
    tokens_billion: float = field(metadata=_input("Training tokens (billion)", "Tokens seen in training.",
                                                  maximum=10_000_000))
    gpu_model: str = field(metadata=_input("GPU model", "A GPU model of the catalog, by name.", kind="gpu"))
    active_params_billion: float | None = field(default=None, metadata=_input(
        "Active parameters (billion)", "Mixture-of-experts: parameters active per token (default: all).",
        maximum=100_000))
    num_gpus: int | None = field(default=None, metadata=_input(
        "GPUs", "GPUs the run gets (optional).", kind="int", maximum=MAX_GPUS))
    precision: str = field(default="bf16", metadata=_input(
        "Precision", "Compute precision of the matrix multiplications.", kind="choice",
        choices=list(PRECISIONS.items())))
    mfu: float | None = field(default=None, metadata=_input(
        "MFU", "Model FLOPs utilisation: achieved share of peak (blank: calibrated on published runs by model "
        "size, GPU class and GPUs).", maximum=1))
    goodput: float | None = field(default=None, metadata=_input(
        "Goodput", "Share of wall-clock time spent training, the rest lost to interruptions and restarts (blank: "
        "from the interruption rate of a 16k-GPU run, by GPUs).", maximum=1))
    seq_len: int = field(default=4096, metadata=_input("Sequence length", "Tokens per sequence.", kind="int",
                                                       maximum=10_000_000))
    global_batch_tokens: int = field(default=4_194_304, metadata=_input(
        "Global batch (tokens)", "Tokens per optimizer step, all GPUs together (default 4M).", kind="int",
        maximum=1_000_000_000))
    dataset_tb: float | None = field(default=None, metadata=_input(
        "Dataset size (TB)", "Training data as stored, read once per run (optional; default 4 bytes per token).",
        maximum=1_000_000))
    checkpoint_interval_hours: float = field(default=1.0, metadata=_input(
        "Checkpoint interval (hours)", "Time between checkpoints.", maximum=10_000))
    deadline_days: float | None = field(default=None, metadata=_input(
        "Deadline (days)", "Wall-clock days the run must finish in (optional).", maximum=10_000))
    pue: float = field(default=DEFAULT_PUE, metadata=_input(
        "PUE", f"Facility power usage effectiveness (default {DEFAULT_PUE}).", minimum=1, maximum=5,
        inclusive=True))
    team: str | None = field(default=None, metadata=_input(
        "Team (Slurm account)", "Size with this team's factor: its finished workloads' realized / estimated "
        "GPU-hours (Planning → Calibration). Blank: no team.", kind="team"))
    calibration_factor: float | None = field(default=None, metadata=_input(
        "Sizing factor", "GPU-hours (and so days, GPUs for the deadline, energy and cost) × this; overrides the "
        "team's factor. Blank: the team's factor, else 1.", maximum=100))

    @property
    def total_params(self):
        return self.params_billion * 1e9

    @property
    def active_params(self):
        return (self.active_params_billion or self.params_billion) * 1e9

    @property
    def tokens(self):
        return self.tokens_billion * 1e9


INPUTS = {f.name: f for f in fields(Workload)}


@dataclass(frozen=True)
class GPU:
    """The catalog figures sizing needs (TFLOP/s dense; ``fp8_tflops`` None: no FP8)."""

    name: str
    memory_gb: float
    bf16_tflops: float
    fp8_tflops: float | None
    tdp_w: float
    nvlink_gbs: float = 0

    @classmethod
    def of(cls, obj):
        """From a ``GPUModel`` (or anything with its attributes); Decimals become floats."""
        fp8 = getattr(obj, "fp8_tflops", None)
        return cls(name=obj.name, memory_gb=float(obj.memory_gb), bf16_tflops=float(obj.bf16_tflops),
                   fp8_tflops=None if fp8 is None else float(fp8), tdp_w=float(obj.tdp_w),
                   nvlink_gbs=float(getattr(obj, "nvlink_gbs", 0) or 0))

    def peak_flops(self, precision):
        return (self.fp8_tflops if precision == "fp8" else self.bf16_tflops) * 1e12


def catalog_gpus():
    """The GPU models of the catalog by name (the adapter to ``inventory``; imported late)."""
    from inventory.models import GPUModel

    return {g.name: GPU.of(g) for g in GPUModel.objects.order_by("vendor", "name")}


# --- Calibrated defaults: MFU and goodput --------------------------------------------------------------------
# A small function of (active parameters, GPU class, GPUs), its few constants fitted by hand on the MFU that
# published runs imply (6·N·D / (published GPU-hours × peak)): the runs of bench/published_runs.csv, whose share
# within ±25 % is therefore an in-sample figure. Figures marked "from memory" were not checked against the paper
# when this was written.
# * A100-class (dense BF16 peak under FAST_GPU_TFLOPS): 40 % at 70B, 4 points less per tenfold fewer parameters.
#   Narayanan et al. 2021 (Megatron-LM): 140-163 TFLOP/s per A100 with recomputation at 175B-1T, i.e. MFU 34-39 %
#   (× 6/8); Llama 2 70B (model card: 1,720,320 A100-hours for 2T tokens) implies 43 %, Llama 1 65B (Touvron et
#   al. 2023: 380 tokens/s/GPU on 2,048 A100) 48 %, BLOOM-176B (Luccioni et al. 2022: 1,082,990 A100-hours) 32 %;
#   Pythia (Biderman et al. 2023, GPU-hours table, from memory) 22 % at 70M to 33 % at 1-7B.
# * H100-class (faster GPUs: more FLOPs per byte of memory and network bandwidth, so small models keep them busy
#   less of the time): 40 % at 405B, 12 points less per tenfold. Llama 3 (Dubey et al. 2024, Table 4): 38-43 %
#   BF16 MFU for 405B on 8,192-16,384 H100; the Llama 3 model card's GPU-hours (8B: 1.3 M, 70B: 6.4 M H100-hours
#   for 15T tokens) imply 16 % and 28 %. Blackwell, AMD Instinct and Gaudi take this curve too: no large published
#   run on them was available for calibration (an assumption). PaLM's 46 % (Chowdhery et al. 2022) is on TPU v4,
#   context only.
# * Scale: 5 % less MFU per doubling beyond SCALE_FREE_GPUS (Llama 3, Table 4: 43 % on 8,192 H100, 41 % on 16,384).
# * FP8: FP8_SPEEDUP × the BF16 throughput, not the 2× of the peaks. Uncertain: NVIDIA Transformer Engine and
#   NeMo results report 1.3-1.5× (from memory); DeepSeek-V3 (DeepSeek-AI 2024: 2.664 M H800-hours for 14.8T tokens,
#   37B active parameters) implies 35 % of the BF16 peak in FP8.
FAST_GPU_TFLOPS = 500
MFU_CURVES = {  # GPU class: (MFU at the anchor size, anchor in billion active parameters, MFU per tenfold)
    "A100-class": (0.40, 70, 0.04),
    "H100-class": (0.40, 405, 0.12),
}
MFU_RANGE = (0.15, 0.55)  # outside the published range the line is not trusted
SCALE_FREE_GPUS = 8192
MFU_LOSS_PER_DOUBLING = 0.05
FP8_SPEEDUP = 1.4
MFU_SOURCE = ("Calibrated on published runs: Narayanan et al. 2021 (Megatron-LM, A100); Touvron et al. 2023 "
              "(Llama 1, 2: A100-hours); Dubey et al. 2024 (Llama 3: 38-43 % BF16 MFU on 16k H100); Biderman et al. "
              "2023 (Pythia); Luccioni et al. 2022 (BLOOM); DeepSeek-AI 2024 (DeepSeek-V3, H800 FP8)")
# Goodput: a synchronous run stops at every interruption and loses the restart and the work since the last
# checkpoint. Llama 3 (Dubey et al. 2024, §3.3.4): 419 unexpected interruptions in a 54-day snapshot on 16,384 H100
# and more than 90 % effective training time, so at most 10 % of 1,296 h / 419 = 0.31 h lost per interruption.
# Interruptions are counted per GPU-hour: a run's count grows with GPUs × days. Other reports put the rate higher:
# Kokolis et al. 2024 (Meta RSC, A100) a mean time to failure of 7.9 h for 1,024-GPU jobs (6× the Llama 3 rate per
# GPU, from memory); OPT-175B's logbook (Zhang et al. 2022) 35+ manual restarts in 2 months on 992 A100.
INTERRUPTIONS_PER_GPU_HOUR = 419 / (16_384 * 54 * 24)
HOURS_LOST_PER_INTERRUPTION = 0.1 * 54 * 24 / 419
GOODPUT_SOURCE = "Dubey et al. 2024 (Llama 3: 419 interruptions in 54 days on 16,384 H100, >90 % effective time)"
YOUR_INPUT = "Your input"
CALIBRATION_SOURCE = "calibration page"


@dataclass(frozen=True)
class TeamFactor:
    """A team's sizing factor: realized / estimated GPU-hours over its ``workloads`` finished workloads."""

    team: str
    factor: float
    workloads: int

    @property
    def source(self):
        return f"team {self.team}: {self.factor:.2f}× from {self.workloads} finished workload" \
               f"{'' if self.workloads == 1 else 's'}, {CALIBRATION_SOURCE}"


def sizing_factor(workload, factors=None):
    """(factor, explanation, source) by which ``workload``'s GPU-hours are multiplied: the factor given, else its
    team's (``factors``: team → :class:`TeamFactor`), else 1."""
    team = factors.get(workload.team) if workload.team and factors else None
    if workload.calibration_factor:
        overrides = f" (instead of team {team.team}'s {team.factor:.2f}×)" if team else ""
        return workload.calibration_factor, f"Given{overrides}.", YOUR_INPUT
    if team:
        return team.factor, (f"Team {team.team}'s finished workloads used {team.factor:.2f}× the GPU-hours the model "
                             "estimated for them."), team.source
    if workload.team:
        return 1.0, f"Team {workload.team} has no calibration here: the model's estimate as is.", CALIBRATION_SOURCE
    return 1.0, "No team or factor given: the model's estimate as is.", RULE


def gpu_class(gpu):
    """``A100-class`` or ``H100-class``: the MFU curve a GPU follows, by its dense BF16 peak."""
    return "H100-class" if gpu.bf16_tflops >= FAST_GPU_TFLOPS else "A100-class"


def default_mfu(active_params, gpu, gpus, precision="bf16"):
    """(MFU, explanation): the calibrated default for ``active_params`` on ``gpus`` of ``gpu`` (see above)."""
    anchor_mfu, anchor_billion, per_decade = MFU_CURVES[gpu_class(gpu)]
    by_size = anchor_mfu + per_decade * math.log10(active_params / 1e9 / anchor_billion)
    mfu = min(max(by_size, MFU_RANGE[0]), MFU_RANGE[1])
    doublings = max(0, math.log2(gpus / SCALE_FREE_GPUS))
    mfu *= 1 - MFU_LOSS_PER_DOUBLING * doublings
    why = (f"{gpu_class(gpu)}: {anchor_mfu:.0%} at {anchor_billion}B active parameters, {per_decade * 100:g} points "
           f"per tenfold, within {MFU_RANGE[0]:.0%}-{MFU_RANGE[1]:.0%}")
    if doublings:
        why += f"; −{MFU_LOSS_PER_DOUBLING:.0%} per doubling beyond {SCALE_FREE_GPUS:,} GPUs"
    if precision == "fp8":
        mfu *= FP8_SPEEDUP * gpu.bf16_tflops / gpu.fp8_tflops
        why += f"; FP8 runs {FP8_SPEEDUP:g}× BF16, of the FP8 peak"
    return mfu, why + "."


def default_goodput(gpus, measured=None):
    """(goodput, explanation, source): the share of wall-clock time spent training on ``gpus`` GPUs; the rest is
    lost to interruptions (their number grows with GPUs × hours, each costs the whole run the same time). The rate
    is the fleet's ``measured`` one (:class:`MeasuredRate`) when it rests on enough interruptions to trust
    (``rates.MIN_INTERRUPTIONS``), else the published runs', and the explanation says why."""
    use = measured if measured and measured.trusted else None
    rate = use.per_gpu_hour if use else INTERRUPTIONS_PER_GPU_HOUR
    lost_share = gpus * rate * HOURS_LOST_PER_INTERRUPTION
    where = (f"Measured on your fleet: {rate * 24:.2g} interruptions per GPU-day over {use.gpu_hours:,.0f} "
             f"GPU-hours of {use.gpu_model} ({use.interval_text})" if use else "Published runs")
    why_not = f" {measured.why_not_trusted}." if measured and not use else ""
    return 1 / (1 + lost_share), (
        f"{where}: {rate * 24:.2g} interruptions per GPU-day × {gpus:,} GPUs, "
        f"{HOURS_LOST_PER_INTERRUPTION * 60:.0f} minutes lost each: {lost_share:.1%} more time.{why_not}"), \
        use.source if use else GOODPUT_SOURCE


class SizingError(ValueError):
    """Invalid inputs: ``errors`` maps an input's name to its messages."""

    def __init__(self, errors):
        super().__init__("; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in errors.items()))
        self.errors = errors


def validate(workload, gpus, factors=None):
    """Every problem with ``workload`` as ``{input: [message]}``; empty when it can be sized. With ``factors``
    (team → :class:`TeamFactor`), a team without one is refused."""
    errors = {}
    for name, spec in INPUTS.items():
        meta, value = spec.metadata, getattr(workload, name)
        if value is None or meta["kind"] in ("gpu", "choice", "team"):
            continue
        low = meta["min"]
        if value < low or (value == low and not meta["inclusive"]):
            errors[name] = [f"Must be {'at least' if meta['inclusive'] else 'greater than'} {low}."]
        elif meta["max"] is not None and value > meta["max"]:
            errors[name] = [f"Must be at most {meta['max']:,}."]
    if workload.precision not in PRECISIONS:
        errors["precision"] = [f"Unknown precision {workload.precision!r}: one of {', '.join(PRECISIONS)}."]
    gpu = gpus.get(workload.gpu_model)
    if gpu is None:
        errors["gpu_model"] = [f"Unknown GPU model {workload.gpu_model!r}: not in the catalog."]
    elif workload.precision == "fp8" and gpu.fp8_tflops is None:
        errors["precision"] = [f"{gpu.name} has no FP8 tensor cores; size it in bf16."]
    if workload.team and factors is not None and workload.team not in factors:
        errors["team"] = [f"No sizing factor for team {workload.team!r}: no finished workload of an approved plan "
                          "ran under this Slurm account with jobs found (see Planning → Calibration)."]
    active = workload.active_params_billion
    if active is not None and "active_params_billion" not in errors and "params_billion" not in errors \
            and active > workload.params_billion:
        errors["active_params_billion"] = ["Active parameters cannot exceed the total parameters."]
    return errors


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    value: float | int | str | None
    unit: str
    explanation: str
    source: str


# Every figure of a sizing, in display order: key → (label, unit, source).
FIGURES = {
    "training_flops": ("Training compute", "FLOP", T101),
    "chinchilla_tokens_billion": ("Compute-optimal tokens", "billion tokens", CHINCHILLA),
    "mfu": ("MFU", "", MFU_SOURCE),
    "goodput": ("Goodput", "", GOODPUT_SOURCE),
    "calibration_factor": ("Sizing factor", "×", CALIBRATION_SOURCE),
    "gpu_hours": ("GPU-hours", "GPU-h", T101 + "; goodput allowance"),
    "gpus": ("GPUs sized for", "GPUs", RULE),
    "wall_clock_days": ("Wall-clock time", "days", T101),
    "gpus_for_deadline": ("GPUs for the deadline", "GPUs", T101),
    "memory_per_gpu_gb": ("Training memory per GPU", "GB", ZERO + "; " + ACTIVATIONS),
    "min_gpus_to_fit": ("GPUs to fit training", "GPUs", ZERO),
    "fit_class": ("Fit", "", RULE),
    "inference_memory_gb": ("Inference memory (bf16)", "GB", T101),
    "inference_min_gpus": ("GPUs to fit inference", "GPUs", T101),
    "step_seconds": ("Step time", "s", MEGATRON),
    "internode_bandwidth_gbps": ("Network per node", "Gb/s", RING),
    "storage_read_gbs": ("Storage read throughput", "GB/s", RULE),
    "checkpoint_size_gb": ("Checkpoint size", "GB", T101),
    "checkpoint_write_gbs": ("Checkpoint write throughput", "GB/s", RULE),
    "checkpoint_time_share": ("Time spent checkpointing", "%", RULE),
    "cpu_cores_per_gpu": ("CPU cores per GPU", "cores", RULE),
    "ram_per_gpu_gb": ("Host RAM per GPU", "GB", RULE),
    "power_kw": ("Power draw", "kW", RULE),
    "energy_kwh": ("Energy", "kWh", RULE),
}


@dataclass(frozen=True)
class Sizing:
    workload: Workload
    gpu: GPU
    figures: dict  # key → Figure, in FIGURES order

    def __getitem__(self, key):
        return self.figures[key].value


def fit_class(gpus):
    """``single_gpu``, ``single_node`` (up to GPUS_PER_NODE GPUs on NVLink) or ``multi_node``."""
    if gpus <= 1:
        return "single_gpu"
    return "single_node" if gpus <= GPUS_PER_NODE else "multi_node"


def model_shape(active_params):
    """(layers, hidden size) of a dense transformer with ``active_params``: N ≈ 12·L·h², h = 128·L."""
    hidden = (active_params * ASPECT_RATIO / 12) ** (1 / 3)
    return hidden / ASPECT_RATIO, hidden


def size(workload, gpus, factors=None, rates=None):
    """Size ``workload`` on its GPU model; ``gpus`` maps catalog names to :class:`GPU`, ``factors`` teams to their
    :class:`TeamFactor` (None: teams are not checked), ``rates`` GPU model names to the fleet's
    :class:`MeasuredRate` of interruptions (the default goodput's; else the published rate). Raises SizingError."""
    errors = validate(workload, gpus, factors)
    if errors:
        raise SizingError(errors)
    w, gpu = workload, gpus[workload.gpu_model]
    n_total, n_active, tokens = w.total_params, w.active_params, w.tokens
    figures = {}

    def put(key, value, explanation, source=None):
        label, unit, default_source = FIGURES[key]
        figures[key] = Figure(key, label, value, unit, explanation, source or default_source)

    moe = " (active parameters: mixture of experts)" if w.active_params_billion else ""
    flops = 6 * n_active * tokens
    put("training_flops", flops, f"6 × N × D = 6 × {n_active:.3g} parameters{moe} × {tokens:.3g} tokens.")
    put("chinchilla_tokens_billion", CHINCHILLA_TOKENS_PER_PARAM * n_active / 1e9,
        f"About {CHINCHILLA_TOKENS_PER_PARAM} tokens per parameter is compute-optimal; this run has "
        f"{tokens / n_active:.1f}.")
    # Training memory: sharded states (16 bytes / parameter over n GPUs) + one GPU's activations.
    layers, hidden = model_shape(n_active)
    activations = w.seq_len * hidden * (2 * layers + 34)
    usable = gpu.memory_gb * 1e9 * USABLE_MEMORY_SHARE
    states = TRAIN_BYTES_PER_PARAM * n_total
    min_gpus = math.ceil(states / (usable - activations)) if usable > activations else None
    put("min_gpus_to_fit", min_gpus,
        f"{TRAIN_BYTES_PER_PARAM} bytes × {n_total:.3g} parameters (all of them) sharded over the GPUs, plus "
        f"{activations / 1e9:.1f} GB of activations per GPU, within {USABLE_MEMORY_SHARE:.0%} of "
        f"{gpu.memory_gb:g} GB." if min_gpus else "The activations of one sequence alone exceed the GPU's memory.")

    peak = gpu.peak_flops(w.precision)
    factor, factor_why, factor_source = sizing_factor(w, factors)

    def run_on(n):
        """(MFU, its explanation, goodput, its explanation and source, GPU-hours) on n GPUs; the user's MFU and
        goodput win. The sizing factor scales the GPU-hours (what the team's runs took), not the hardware's
        throughput."""
        mfu, mfu_why = (w.mfu, "") if w.mfu else default_mfu(n_active, gpu, n, w.precision)
        goodput, goodput_why, goodput_source = (w.goodput, "", YOUR_INPUT) if w.goodput else default_goodput(
            n, (rates or {}).get(w.gpu_model))
        return mfu, mfu_why, goodput, goodput_why, goodput_source, flops / (peak * mfu) / 3600 / goodput * factor

    deadline_gpus = None
    if w.deadline_days:
        # The GPU-hours grow with the GPUs (MFU at scale, interruptions), so search for the fewest that finish in
        # time: wall-clock time still falls as GPUs are added.
        def in_time(n):
            return run_on(n)[-1] / n / 24 <= w.deadline_days

        low = min_gpus or 1
        high = low
        while not in_time(high) and high < MAX_GPUS:
            low, high = high + 1, min(2 * high, MAX_GPUS)
        if in_time(high):
            while low < high:
                middle = (low + high) // 2
                low, high = (low, middle) if in_time(middle) else (middle + 1, high)
            deadline_gpus = high
        put("gpus_for_deadline", deadline_gpus, f"The fewest GPUs that finish in {w.deadline_days:g} days (GPU-hours "
            "on that many / GPUs / 24 h), and at least the GPUs to fit." if deadline_gpus else
            f"No count up to {MAX_GPUS:,} GPUs finishes in {w.deadline_days:g} days.")
    else:
        put("gpus_for_deadline", None, "Give a deadline to get the GPUs it needs.")

    n, why = ((w.num_gpus, "the GPUs given") if w.num_gpus else (deadline_gpus, "the GPUs for the deadline")
              if deadline_gpus else (min_gpus or 1, "the fewest GPUs that fit training"))
    put("gpus", n, f"The figures below that depend on a GPU count use {why}.")
    mfu, mfu_why, goodput, goodput_why, goodput_source, gpu_hours = run_on(n)
    put("mfu", mfu, mfu_why or "Given.", None if mfu_why else YOUR_INPUT)
    put("goodput", goodput, goodput_why or "Given.", goodput_source)
    put("calibration_factor", factor, factor_why + " It multiplies the GPU-hours, days and energy; step time, "
        "memory and bandwidths are the hardware's.", factor_source)
    put("gpu_hours", gpu_hours, f"FLOPs / ({PRECISIONS[w.precision]} peak {peak / 1e12:,.1f} TFLOP/s × MFU "
        f"{mfu:.3g}) / 3600 / goodput {goodput:.3g}" + (f" × sizing factor {factor:.3g}" if factor != 1 else "")
        + f", on {n:,} GPUs.")
    put("wall_clock_days", gpu_hours / n / 24, f"GPU-hours / {n:,} GPUs / 24, assuming the MFU holds at this scale.")
    fits = min_gpus is not None and n >= min_gpus
    put("memory_per_gpu_gb", (states / n + activations) / 1e9,
        f"{TRAIN_BYTES_PER_PARAM} bytes / parameter / {n:,} GPUs + activations (full recomputation, micro-batch 1): "
        + ("fits." if fits else f"does NOT fit {gpu.memory_gb:g} GB."))
    fit = fit_class(min_gpus) if min_gpus else "multi_node"
    put("fit_class", fit, f"Training needs {min_gpus or 'more than any number of'} GPU(s); a node holds "
        f"{GPUS_PER_NODE}" + ("" if gpu.nvlink_gbs or fit == "single_gpu" else ", but this GPU has no NVLink") + ".")

    kv_cache = 2 * 2 * layers * hidden * w.seq_len  # K and V, bf16, every layer, one sequence
    inference = INFERENCE_BYTES_PER_PARAM * n_total + kv_cache
    put("inference_memory_gb", inference / 1e9, f"{INFERENCE_BYTES_PER_PARAM} bytes × parameters + KV cache of one "
        f"{w.seq_len:,}-token sequence ({kv_cache / 1e9:.1f} GB, without grouped-query attention).")
    put("inference_min_gpus", math.ceil(inference / usable), "Inference memory / usable memory per GPU.")

    # Throughput of the whole run on n GPUs.
    tokens_per_s = n * peak * mfu / (6 * n_active)
    step = w.global_batch_tokens / tokens_per_s
    put("step_seconds", step, f"Global batch {w.global_batch_tokens:,} tokens / {tokens_per_s:,.0f} tokens/s "
        "(n × peak × MFU / 6N).")
    if n > GPUS_PER_NODE:
        ring_bytes = 2 * (n - 1) / n * GRADIENT_BYTES_PER_PARAM * n_total
        put("internode_bandwidth_gbps", ring_bytes * 8 / 1e9 / (SYNC_SHARE * step),
            f"Ring all-reduce 2·(n−1)/n × {GRADIENT_BYTES_PER_PARAM} bytes of gradients per parameter, within "
            f"{SYNC_SHARE:.0%} of the step.")
    else:
        put("internode_bandwidth_gbps", 0, "One node: gradients are synchronised over NVLink / PCIe only.")
    bytes_per_token = w.dataset_tb * 1e12 / tokens if w.dataset_tb else DEFAULT_BYTES_PER_TOKEN
    put("storage_read_gbs", tokens_per_s * bytes_per_token / 1e9,
        f"{tokens_per_s:,.0f} tokens/s × {bytes_per_token:.3g} bytes per token"
        + (" (dataset size / tokens)." if w.dataset_tb else " (tokenised, uint32)."))
    checkpoint = CHECKPOINT_BYTES_PER_PARAM * n_total
    put("checkpoint_size_gb", checkpoint / 1e9, f"{CHECKPOINT_BYTES_PER_PARAM} bytes × parameters: bf16 weights and "
        "fp32 master weights, momentum and variance.")
    put("checkpoint_write_gbs", checkpoint / 1e9 / CHECKPOINT_WRITE_SECONDS,
        f"Checkpoint size / {CHECKPOINT_WRITE_SECONDS // 60} minutes.")
    put("checkpoint_time_share", 100 * CHECKPOINT_WRITE_SECONDS / (w.checkpoint_interval_hours * 3600),
        f"{CHECKPOINT_WRITE_SECONDS // 60} minutes of writing every {w.checkpoint_interval_hours:g} h (if not "
        "written asynchronously).")
    put("cpu_cores_per_gpu", CPU_CORES_PER_GPU, "Data-loader workers, the training process and its threads.")
    put("ram_per_gpu_gb", HOST_RAM_PER_GPU_MEMORY * gpu.memory_gb,
        f"{HOST_RAM_PER_GPU_MEMORY} × the GPU's memory: pinned buffers, page cache, checkpoint staging.")
    put("power_kw", n * gpu.tdp_w * w.pue / 1000, f"{n:,} GPUs × {gpu.tdp_w:g} W TDP × PUE {w.pue:g} (GPUs only).")
    put("energy_kwh", gpu_hours * gpu.tdp_w / 1000 * w.pue, f"GPU-hours × {gpu.tdp_w:g} W × PUE {w.pue:g}.")
    return Sizing(w, gpu, {key: figures[key] for key in FIGURES})


def run_costs(gpu_hours, gpu_model, rate=None, rate_source=""):
    """What the run's GPU-hours cost on the fleet's owned ``gpu_model`` nodes (their cost per GPU-hour from the
    contracts) and rented (``rate`` per GPU-hour with its ``rate_source``, as a plan that sets its own rate passes
    it; else ``contracts.costs.rental_rate``): ``{"owned_cost": Figure, "rental_cost": Figure}``, each saying where
    its rate comes from; value None when no rate is known (never 0). The one pricing of a workload's GPU-hours: the
    sizing page, its API and a plan's workloads read it. The adapter to ``planning.contracts``."""
    from django.conf import settings

    from ..contracts.costs import owned_gpu_hour_cost

    currency = settings.COST_CURRENCY
    owned, contracts = owned_gpu_hour_cost(gpu_model)
    power = f"power at PUE {settings.DEFAULT_PUE:g} and {settings.ENERGY_PRICE_PER_KWH:g} {currency}/kWh"
    if owned:
        owned_figure = Figure("owned_cost", "Cost on owned GPUs", gpu_hours * float(owned), currency,
                              f"GPU-hours × {owned:.4f} {currency} per GPU-hour, the cost of the fleet's owned "
                              f"{gpu_model} nodes.", "; ".join([*(f"contract {c}" for c in contracts), power]))
    else:
        owned_figure = Figure("owned_cost", "Cost on owned GPUs", None, currency,
                              f"Not known: no {gpu_model} node of the fleet has a cost from a purchase or "
                              "expansion contract.", "the contracts")
    rental_figure = rental_cost(gpu_hours, rate, rate_source)
    return {"owned_cost": owned_figure, "rental_cost": rental_figure}


def rental_cost(gpu_hours, rate=None, rate_source=""):
    """The run rented whole (every GPU-hour) at ``rate`` (a plan's own, with its ``rate_source``), else at
    ``contracts.costs.rental_rate``: a ``Figure`` whose value is None when no rate is known (never 0)."""
    from django.conf import settings

    from ..contracts.costs import rental_rate

    currency = settings.COST_CURRENCY
    if rate is None:
        rate, rentals = rental_rate()
        rental_source = ("; ".join(f"rental contract {c}" for c in rentals) + " (their mean rate)" if rentals else
                         "the setting RENTAL_GPU_HOUR_COST (no active rental contract gives a rate)")
    else:
        rate, rental_source = float(rate), rate_source or "the rate given"
    # Renting the whole run: every GPU-hour rented. A plan's rent scenario prices another quantity (only the
    # shortfall beyond the fleet, in whole nodes by the month) at this same rate.
    whole_run = "Renting the whole run: every GPU-hour rented"
    if rate:
        rental_figure = Figure("rental_cost", "Cost rented", gpu_hours * rate, currency,
                               f"{whole_run}, GPU-hours × {rate:.4f} {currency} per GPU-hour.", rental_source)
    else:
        rental_figure = Figure("rental_cost", "Cost rented", None, currency,
                               f"Not known: the rental rate is 0 ({whole_run.lower()}).", rental_source)
    return rental_figure


# The figures that the comparison of GPU models shows.
COMPARISON_FIGURES = ["min_gpus_to_fit", "fit_class", "gpu_hours", "gpus", "wall_clock_days", "gpus_for_deadline",
                      "energy_kwh"]


@dataclass(frozen=True)
class ComparisonRow:
    gpu: GPU
    sizing: Sizing | None
    problem: str = ""  # why it could not be sized, e.g. no FP8

    @property
    def values(self):
        """The comparison figures' values by key (all None when it could not be sized)."""
        return {key: self.sizing[key] if self.sizing else None for key in COMPARISON_FIGURES}


def compare_all(workload, gpus, factors=None, rates=None):
    """The same workload on every GPU model of ``gpus`` (name → GPU), in its order."""
    rows = []
    for gpu in gpus.values():
        try:
            rows.append(ComparisonRow(gpu, size(replace(workload, gpu_model=gpu.name), gpus, factors, rates)))
        except SizingError as error:
            rows.append(ComparisonRow(gpu, None, " ".join(m for msgs in error.errors.values() for m in msgs)))
    return rows
