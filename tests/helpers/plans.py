"""Capacity plans through the API: a plan body with workloads and a bill of materials, creating one, acting on it."""

PLANS = "/api/planning/plans/"


def plan_body(catalog, **overrides):
    return {
        "name": "2027 expansion", "first_month": "2027-01", "last_month": "2027-12",
        "workloads": [{"name": "70B pretraining", "start": "2027-03", "gpu_model": catalog["gpu_model"].pk,
                       "inputs": {"params_billion": 70, "tokens_billion": 2000, "num_gpus": 512}}],
        "items": [
            {"node_model": catalog["node_model"].pk, "quantity": 4, "unit_cost": "250000.00"},
            {"gpu_model": catalog["gpu_model"].pk, "quantity": 32, "unit_cost": "30000.00"},
            {"description": "400G switches", "quantity": 2, "unit_cost": "40000.00", "currency": "eur"},
        ],
        **overrides,
    }


def create_plan(api, catalog, **overrides):
    response = api.post(PLANS, plan_body(catalog, **overrides), format="json")
    assert response.status_code == 201, response.data
    return response.data


def act(client, plan_id, name, comment=""):
    return client.post(f"{PLANS}{plan_id}/{name}/", {"comment": comment}, format="json")
