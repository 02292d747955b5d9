"""Workload sizing: hand-computed cases of ``planning.sizing.sizing``, the page and ``POST /api/planning/sizing/``."""

import math
from types import SimpleNamespace
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from inventory.catalog import GPU_MODELS
from planning.sizing import sizing
from planning.sizing.sizing import GPU, SizingError, Workload, compare_all, fit_class, size
from portal.roles import RESEARCHER
from tests.helpers.accounts import make_user, token_client

CATALOG = {d["name"]: GPU.of(SimpleNamespace(**d)) for d in GPU_MODELS}
H100 = "H100 SXM 80GB"
API = "/api/planning/sizing/"
FIXED = {"mfu": 0.4, "goodput": 1}  # the hand computations below; the calibrated defaults have their own tests


def sized(**inputs):
    return size(Workload(**{"gpu_model": H100, **inputs}), CATALOG)


def test_7b_on_2t_tokens_hand_computed():
    s = sized(params_billion=7, tokens_billion=2000, num_gpus=512, **FIXED)
    assert s["training_flops"] == pytest.approx(8.4e22)  # 6 · 7e9 · 2e12
    assert s["gpu_hours"] == pytest.approx(8.4e22 / (989.4e12 * 0.4) / 3600)
    assert s["gpu_hours"] == pytest.approx(58_958, rel=1e-4)
    assert s["wall_clock_days"] == pytest.approx(58_958 / 512 / 24, rel=1e-4)
    assert s["checkpoint_size_gb"] == pytest.approx(14 * 7)  # 14 bytes per parameter
    assert s["checkpoint_write_gbs"] == pytest.approx(98 / 300)
    assert s["energy_kwh"] == pytest.approx(s["gpu_hours"] * 0.7 * 1.3)
    assert s["power_kw"] == pytest.approx(512 * 0.7 * 1.3)
    assert s["chinchilla_tokens_billion"] == pytest.approx(140)
    for figure in s.figures.values():
        assert figure.explanation and figure.source and figure.label
    assert set(s.figures) == set(sizing.FIGURES)


def test_fp8_doubles_the_peak():
    assert sized(params_billion=7, tokens_billion=2000, precision="fp8", **FIXED)["gpu_hours"] == pytest.approx(
        sized(params_billion=7, tokens_billion=2000, **FIXED)["gpu_hours"] * 989.4 / 1978.9)


def test_70b_does_not_fit_one_80gb_gpu_for_training():
    s = sized(params_billion=70, tokens_billion=1400, num_gpus=1)
    assert s["min_gpus_to_fit"] >= 16  # 1,120 GB of states over 72 GB usable per GPU, less activations
    assert s["memory_per_gpu_gb"] > 80
    assert "does NOT fit" in s.figures["memory_per_gpu_gb"].explanation
    assert s["fit_class"] == "multi_node"
    assert s["inference_min_gpus"] == 3  # 140 GB of bf16 weights + ~10 GB KV cache > 2 × 72 GB usable


def test_moe_active_params_for_flops_total_params_for_memory():
    moe = sized(params_billion=47, active_params_billion=13, tokens_billion=1000)
    dense = sized(params_billion=13, tokens_billion=1000)
    assert moe["training_flops"] == pytest.approx(6 * 13e9 * 1e12) == dense["training_flops"]
    assert moe["min_gpus_to_fit"] > dense["min_gpus_to_fit"]
    assert moe["checkpoint_size_gb"] == pytest.approx(14 * 47)
    assert moe["inference_memory_gb"] > 2 * 47


def test_deadline_gives_the_gpus_it_needs():
    s = sized(params_billion=7, tokens_billion=2000, deadline_days=30, **FIXED)
    assert s["gpus_for_deadline"] == 82  # ceil(58,958 / 720)
    assert s["gpus"] == 82 and s["wall_clock_days"] <= 30
    assert sized(params_billion=7, tokens_billion=2000)["gpus_for_deadline"] is None


# --- the references' worked examples -------------------------------------------------------------------------
# Megatron-LM (Narayanan et al. 2021, §5.1) reports *hardware* FLOP/s with activation recomputation, 8·N·D per run
# (one extra forward pass); the model's useful rate is 6/8 of it, so MFU = reported × 6/8 / peak.

A100 = "A100 80GB SXM"


def test_gpt3_and_chinchilla_training_compute():
    # Transformer Math 101 / Brown et al. 2020: GPT-3 175B on 300B tokens, 3.14e23 FLOPs.
    assert sized(params_billion=175, tokens_billion=300)["training_flops"] == pytest.approx(3.14e23, rel=0.01)
    # Hoffmann et al. 2022: Chinchilla, 70B parameters on 1.4T tokens (20 per parameter), 5.76e23 FLOPs.
    chinchilla = sized(params_billion=70, tokens_billion=1400)
    assert chinchilla["training_flops"] == pytest.approx(5.76e23, rel=0.03)
    assert chinchilla["chinchilla_tokens_billion"] == pytest.approx(1400)


@pytest.mark.parametrize("params, tokens, gpus, reported_tflops, paper_days", [
    (175, 300, 1024, 140, 34),  # GPT-3 on 1,024 A100: "34 days"
    (1000, 450, 3072, 163, 84),  # 1T parameters on 3,072 A100: "84 days"
])
def test_megatron_training_times(params, tokens, gpus, reported_tflops, paper_days):
    mfu = reported_tflops * 6 / 8 / 312
    s = sized(gpu_model=A100, params_billion=params, tokens_billion=tokens, num_gpus=gpus, mfu=mfu)
    assert s["wall_clock_days"] == pytest.approx(paper_days, rel=0.02)  # 33.9 and 83.2 days



# --- calibrated defaults: MFU by model size, GPU class and scale; goodput by GPUs ----------------------------

def test_blank_mfu_and_goodput_follow_llama_3_on_16k_h100():
    s = sized(params_billion=405, tokens_billion=15_600, num_gpus=16_384)
    # Dubey et al. 2024: 38-43 % BF16 MFU on 16k H100 and more than 90 % effective training time.
    assert 0.37 <= s["mfu"] <= 0.43 and s["goodput"] == pytest.approx(0.909, abs=0.001)
    assert s["gpu_hours"] == pytest.approx(6 * 405e9 * 15.6e12 / (989.4e12 * s["mfu"]) / 3600 / s["goodput"])
    assert "Dubey et al. 2024" in s.figures["mfu"].source and "Llama 3" in s.figures["goodput"].source
    assert "H100-class" in s.figures["mfu"].explanation and "per doubling beyond 8,192" in s.figures["mfu"].explanation


def test_calibrated_mfu_grows_with_model_size_and_falls_with_scale():
    h100 = CATALOG[H100]
    assert sizing.default_mfu(8e9, h100, 512)[0] < sizing.default_mfu(70e9, h100, 512)[0] < 0.40
    assert sizing.default_mfu(70e9, CATALOG[A100], 512)[0] == pytest.approx(0.40)  # the A100-class anchor
    assert sizing.default_mfu(405e9, h100, 32_768)[0] == pytest.approx(0.40 * 0.90)  # two doublings beyond 8,192
    assert sizing.default_mfu(1e6, h100, 1)[0] == sizing.MFU_RANGE[0]  # a tiny model: the floor
    fp8, _ = sizing.default_mfu(405e9, h100, 1024, "fp8")
    assert fp8 * 1978.9 == pytest.approx(0.40 * 989.4 * sizing.FP8_SPEEDUP)  # FP8 is 1.4× BF16, not 2×


def test_goodput_allowance_grows_with_gpus():
    assert sizing.default_goodput(8)[0] > 0.999 > sizing.default_goodput(2048)[0] > sizing.default_goodput(16_384)[0]


def test_the_users_mfu_and_goodput_win_over_the_defaults():
    s = sized(params_billion=70, tokens_billion=2000, num_gpus=2048, mfu=0.5, goodput=0.8)
    assert (s["mfu"], s["goodput"]) == (0.5, 0.8)
    assert s.figures["mfu"].source == s.figures["goodput"].source == sizing.YOUR_INPUT
    assert s["gpu_hours"] == pytest.approx(6 * 70e9 * 2e12 / (989.4e12 * 0.5) / 3600 / 0.8)


# --- properties of the model, over many inputs -------------------------------------------------------------

PROPERTY_SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None)  # same cases each run
params = st.floats(min_value=0.1, max_value=2000)
tokens = st.floats(min_value=1, max_value=20_000)
gpu_counts = st.integers(min_value=1, max_value=100_000)


@PROPERTY_SETTINGS
@given(params=params, tokens=tokens, fewer=gpu_counts, more=gpu_counts, model=st.sampled_from(list(CATALOG)))
def test_more_gpus_never_raise_wall_clock_time(params, tokens, fewer, more, model):
    fewer, more = sorted((fewer, more))
    run = {"gpu_model": model, "params_billion": params, "tokens_billion": tokens}
    assert sized(**run, num_gpus=more)["wall_clock_days"] <= sized(**run, num_gpus=fewer)["wall_clock_days"]


@PROPERTY_SETTINGS
@given(smaller=params, larger=params, gpus=gpu_counts, seq_len=st.integers(min_value=128, max_value=131_072))
def test_more_parameters_never_lower_memory(smaller, larger, gpus, seq_len):
    smaller, larger = sorted((smaller, larger))
    run = {"tokens_billion": 100, "num_gpus": gpus, "seq_len": seq_len}
    small, large = sized(**run, params_billion=smaller), sized(**run, params_billion=larger)
    for figure in ("memory_per_gpu_gb", "min_gpus_to_fit", "inference_memory_gb", "checkpoint_size_gb"):
        assert as_number(large[figure]) >= as_number(small[figure]), figure


def as_number(value):
    """``min_gpus_to_fit`` is None when one sequence's activations alone exceed a GPU: no GPU count fits."""
    return math.inf if value is None else value


@PROPERTY_SETTINGS
@given(params=params, tokens=tokens, deadline=st.floats(min_value=0.5, max_value=3650))
def test_the_gpus_for_a_deadline_meet_it(params, tokens, deadline):
    s = sized(params_billion=params, tokens_billion=tokens, deadline_days=deadline)
    if s["gpus_for_deadline"] is None:  # interruptions grow with the GPUs: no count meets some deadlines
        most = sized(params_billion=params, tokens_billion=tokens, num_gpus=sizing.MAX_GPUS)
        assert most["wall_clock_days"] > deadline
        return
    assert s["wall_clock_days"] <= deadline * (1 + 1e-9)
    # One GPU fewer would miss it, or not hold the training state (a count the inputs allow: at most 1,000,000).
    if 1 < s["gpus_for_deadline"] <= 1_000_000:
        fewer = sized(params_billion=params, tokens_billion=tokens, num_gpus=s["gpus_for_deadline"] - 1)
        assert fewer["wall_clock_days"] > deadline or fewer["gpus"] < as_number(s["min_gpus_to_fit"])


@pytest.mark.parametrize("gpus, expected", [(1, "single_gpu"), (2, "single_node"), (8, "single_node"),
                                            (9, "multi_node")])
def test_fit_class_boundaries(gpus, expected):
    assert fit_class(gpus) == expected


def test_small_model_fits_one_gpu_and_needs_no_network():
    s = sized(params_billion=1, tokens_billion=20)
    assert s["min_gpus_to_fit"] == 1 and s["fit_class"] == "single_gpu"
    assert s["internode_bandwidth_gbps"] == 0


def test_network_per_node_follows_the_ring():
    s = sized(params_billion=7, tokens_billion=2000, num_gpus=64, **FIXED)
    ring = 2 * 63 / 64 * 2 * 7e9  # bytes per step
    assert s["internode_bandwidth_gbps"] == pytest.approx(ring * 8 / 1e9 / (0.2 * s["step_seconds"]))
    tokens_per_s = 64 * 989.4e12 * 0.4 / (6 * 7e9)
    assert s["step_seconds"] == pytest.approx(4_194_304 / tokens_per_s)
    assert s["storage_read_gbs"] == pytest.approx(tokens_per_s * 4 / 1e9)


@pytest.mark.parametrize("inputs, field, message", [
    ({"params_billion": 0}, "params_billion", "greater than 0"),
    ({"tokens_billion": -5}, "tokens_billion", "greater than 0"),
    ({"mfu": 1.5}, "mfu", "at most 1"),
    ({"mfu": 0}, "mfu", "greater than 0"),  # no work gets done: an infinite run, not a division by zero
    ({"gpu_model": "Z9000"}, "gpu_model", "Unknown GPU model"),
    ({"gpu_model": "A100 80GB SXM", "precision": "fp8"}, "precision", "no FP8"),
    ({"active_params_billion": 8}, "active_params_billion", "cannot exceed"),
])
def test_invalid_inputs_are_refused_with_a_clear_message(inputs, field, message):
    with pytest.raises(SizingError) as error:
        sized(**{"params_billion": 7, "tokens_billion": 100, **inputs})
    assert message in " ".join(error.value.errors[field])


def test_compare_all_sizes_every_gpu_model():
    rows = compare_all(Workload(7, 2000, H100, precision="fp8"), CATALOG)
    assert [row.gpu.name for row in rows] == list(CATALOG)
    a100 = [row for row in rows if row.gpu.name.startswith("A100")]
    assert all(row.sizing is None and "FP8" in row.problem for row in a100)
    b200 = next(row for row in rows if row.gpu.name == "B200")
    assert b200.values["gpu_hours"] < next(r for r in rows if r.gpu.name == H100).values["gpu_hours"]


# --- page and API (the catalog comes from the seeding migration) ---

QUERY = {"params_billion": 7, "tokens_billion": 2000, "gpu_model": H100, "deadline_days": 30, **FIXED}


def test_page_renders_a_result_and_a_comparison_row_per_gpu_model(viewer_client):
    response = viewer_client.get(reverse("planning:sizing"), QUERY)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="figure-gpu_hours"' in html and "58,958" in html
    assert html.count('class="comparison-row"') == len(GPU_MODELS)
    assert 'data-source="sizing-chart"' in html and "Workload sizing" in html


def test_page_without_inputs_shows_the_form_and_errors(viewer_client):
    url = reverse("planning:sizing")
    assert 'id="sizing-form"' in viewer_client.get(url).content.decode()
    html = viewer_client.get(url, {**QUERY, "gpu_model": "A100 80GB SXM", "precision": "fp8"}).content.decode()
    assert "no FP8 tensor cores" in html and 'id="sizing-result"' not in html


def test_page_requires_login(client):
    response = client.get(reverse("planning:sizing"), QUERY)
    assert response.status_code == 302 and "login" in response["Location"]


def test_api_sizes_and_compares(viewer_api):
    response = viewer_api.post(API, QUERY, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["figures"]["gpu_hours"]["value"] == pytest.approx(58_958, rel=1e-4)
    assert body["figures"]["gpus_for_deadline"]["value"] == 82
    assert body["figures"]["fit_class"]["source"]
    assert body["figures"]["mfu"]["source"] == "Your input"
    defaults = viewer_api.post(API, {**QUERY, "mfu": None, "goodput": None}, format="json").json()["figures"]
    assert "Calibrated on published runs" in defaults["mfu"]["source"] and defaults["goodput"]["value"] < 1
    assert len(body["comparison"]) == len(GPU_MODELS)


@pytest.mark.parametrize("body, field", [
    ({**QUERY, "params_billion": -1}, "params_billion"),
    ({**QUERY, "gpu_model": "A100 40GB SXM", "precision": "fp8"}, "precision"),
    ({**QUERY, "gpu_model": "nope"}, "gpu_model"),
    ({**QUERY, "mfu": 0}, "mfu"),
    ({"tokens_billion": 10, "gpu_model": H100}, "params_billion"),
])
def test_api_refuses_invalid_inputs_by_field(manager_api, body, field):
    response = manager_api.post(API, body, format="json")
    assert response.status_code == 400 and field in response.json()


def test_api_refuses_a_boolean_for_a_number(manager_api):
    response = manager_api.post(API, {**QUERY, "params_billion": True}, format="json")
    assert response.status_code == 400 and "A valid number is required." in response.json()["params_billion"]


def test_schema_states_the_inputs_limits(viewer_api):
    schema = viewer_api.get("/api/schema/", {"format": "json"}).json()
    ref = schema["paths"][API]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    inputs = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]
    assert {key: inputs["mfu"][key] for key in ("minimum", "exclusiveMinimum", "maximum")} == {
        "minimum": 0, "exclusiveMinimum": True, "maximum": 1}
    assert inputs["pue"]["minimum"] == 1 and inputs["pue"]["exclusiveMinimum"] is False
    assert "maximum" not in inputs["precision"]


def test_api_refuses_anonymous(db):
    from rest_framework.test import APIClient

    assert APIClient().post(API, QUERY, format="json").status_code in (401, 403)


def test_an_account_without_a_role_gets_the_no_role_page_and_a_403_from_the_api(db):
    """Sizing shows the fleet's measured interruption rate and its teams (issue 33): not to an account without a
    role, which gets the page that says how to get one; every role may size."""
    nobody = make_user("newcomer", None)
    client = Client()
    client.force_login(nobody)
    for response in (client.get(reverse("planning:sizing"), QUERY), client.get(reverse("planning:sizing")),
                     client.post(reverse("planning:sizing") + "?" + urlencode(QUERY))):
        assert response.status_code == 403
        html = response.content.decode()
        assert "no role yet" in html and 'id="sizing-form"' not in html and 'id="figure-gpu_hours"' not in html
    response = token_client(nobody).post(API, QUERY, format="json")
    assert response.status_code == 403 and "figures" not in response.json()
    researcher = make_user("rita", RESEARCHER)
    client.force_login(researcher)
    assert 'id="figure-gpu_hours"' in client.get(reverse("planning:sizing"), QUERY).content.decode()
    assert token_client(researcher).post(API, QUERY, format="json").status_code == 200
