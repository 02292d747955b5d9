"""``POST /api/planning/sizing/``: size a workload (nothing is stored)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from inventory.telemetry.api.views import CanViewTelemetry

from ...calibration.calibration import calibrate
from ...calibration.validation import validate
from ...goodput import measured_rates
from .. import sizing
from ..fleet import fleet_fit
from ..rates import rate_basis
from . import serializers as api


class SizingView(APIView):
    """Workload sizing (``planning.sizing``): compute, memory, network, storage, host and power of a training run,
    and the same run on every GPU model of the catalog. Every role may size (an account without one may not: the
    sizing uses the fleet's measured interruption rates and its teams' factors)."""

    permission_classes = [CanViewTelemetry]

    @extend_schema(
        summary="Size a training workload",
        description=(
            "Training FLOPs (6·N·D), GPU-hours at the given MFU and goodput (blank: defaults calibrated on "
            "published training runs by model size, GPU class and GPUs; `figures.mfu` and `figures.goodput` say "
            "which values were used and their sources), wall-clock days, GPUs for a deadline, memory per GPU and "
            "GPUs to fit (mixed-precision Adam, sharded optimizer state; and bf16 inference), fit class, network per "
            "node, storage and checkpoint throughput, host CPU and RAM per GPU, power and energy. Each figure comes "
            "with its unit, a one-line explanation and the reference it follows; `comparison` sizes the same "
            "workload on every GPU model of the catalog; `costs` prices the GPU-hours on the fleet's owned nodes of "
            "the GPU model (from the contracts) and at the rental rate, with their sources (null: not known): renting "
            "the whole run, where a plan's rent scenario rents only the shortfall beyond the fleet; `fleet`: the "
            "fleet's GPUs of the model by the capacity model (as `GET /api/inventory/capacity/` counts them) and "
            "whether the run's GPUs fit in them. "
            "`team` (a Slurm account) applies that team's sizing factor from `GET /api/planning/calibration/`, "
            "`calibration_factor` a factor of your own: GPU-hours, days, energy and cost × the factor, "
            "`figures.calibration_factor` says which and where from. The default goodput uses the fleet's measured "
            "infrastructure interruption rate of the GPU model (`inventory.goodput`) where its jobs held at least "
            "`SIZING_MEASURED_MIN_GPU_HOURS` GPU-hours over `SIZING_MEASURED_RANGE` and it rests on at least 10 "
            "interruptions (fewer: its 95 % interval is too wide to trust), else the published rate; "
            "`figures.goodput` and `interruption_rate` say which, with the fleet's rate and its interval. "
            "`accuracy`: how close the calibrated GPU-hours come to published training runs, in sample, "
            "leave-one-out and on held-out runs."
        ),
        request=api.SizingInputSerializer,
        responses={200: api.SizingSerializer,
                   400: OpenApiResponse(description='Invalid inputs by field, e.g. `{"precision": ["A100 80GB '
                                                    'SXM has no FP8 tensor cores; size it in bf16."]}`.')},
    )
    def post(self, request):
        gpus, factors, rates = sizing.catalog_gpus(), calibrate().factors, measured_rates()
        params = api.SizingInputSerializer(data=request.data, context={"gpus": gpus, "factors": factors})
        params.is_valid(raise_exception=True)
        workload = sizing.Workload(**params.validated_data)
        result = sizing.size(workload, gpus, factors, rates)
        answer = {"gpu": result.gpu, "figures": result.figures,
                  "costs": sizing.run_costs(result["gpu_hours"], workload.gpu_model),
                  "fleet": fleet_fit(workload.gpu_model, result["gpus"]).as_dict(),
                  "comparison": sizing.compare_all(workload, gpus, factors, rates),
                  "interruption_rate": rate_basis(rates.get(workload.gpu_model), sizing.INTERRUPTIONS_PER_GPU_HOUR,
                                                  sizing.GOODPUT_SOURCE, goodput_given=bool(workload.goodput)),
                  "accuracy": validate().as_dict()}
        return Response(api.SizingSerializer(answer).data)
