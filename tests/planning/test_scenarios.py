"""Build / expand / rent / hybrid scenarios against hand-computed figures, and the recommendation."""

from dataclasses import replace

import pytest

from planning.plans import scenarios as sc

HOURS = 730


def assumptions(**kw):
    values = dict(
        horizon=6, gpus_per_node=8, node_kw=10.0, node_height_u=8, node_price=100_000.0, rental_rate=2.0,
        target_utilization=1.0, lead_build=4, lead_expand=2, lead_rent=1, site_pue=1.5, site_energy_price=0.2,
        site_rack_cost=1000.0, site_power_headroom_kw=100.0, build_pue=1.2, build_energy_price=0.1,
        build_cost_per_kw=10_000.0, network_share=0.1, storage_share=0.1, support_share_per_year=0.12,
        depreciation_months=10, idle_power_share=0.5, rack_power_kw=40.0, rack_units=42,
    )
    values.update(kw)
    return sc.Assumptions(**values)


# Demand: 16 GPUs busy all month; the fleet has 8. One 8-GPU node closes the gap.
DEMAND = [16 * HOURS] * 6
BASELINE = [8 * HOURS] * 6


def by_kind(results):
    return {s.kind: s for s in results}


def test_expand_by_hand():
    expand = by_kind(sc.scenarios(DEMAND, BASELINE, assumptions()))["expand"]
    assert expand.nodes == 1
    assert expand.capex == pytest.approx(120_000)  # 100,000 × (1 + 0.1 network + 0.1 storage)
    # Months 3-6 (after a 2-month lead): depreciation 12,000 + energy 10 kW × load 1 × 730 h × PUE 1.5 × 0.2
    # = 2,190 + support 120,000 × 12 % / 12 = 1,200 + one rack 1,000 = 16,390 a month.
    assert expand.cost == pytest.approx([0, 0, 16_390, 16_390, 16_390, 16_390])
    assert expand.cash == pytest.approx([120_000, 0, 4_390, 4_390, 4_390, 4_390])
    assert (expand.energy, expand.support, expand.space) == pytest.approx((4 * 2190, 4 * 1200, 4 * 1000))
    assert expand.capacity == [8 * HOURS] * 2 + [16 * HOURS] * 4
    assert expand.met_from == 3
    assert expand.unmet_hours == 2 * 8 * HOURS
    assert expand.useful_hours == 4 * 8 * HOURS
    assert expand.cost_per_useful_hour == pytest.approx(65_560 / 23_360)
    assert expand.utilization == pytest.approx(1.0)


def test_build_pays_for_the_facility_and_waits_longer():
    build = by_kind(sc.scenarios(DEMAND, BASELINE, assumptions()))["build"]
    assert build.capex == pytest.approx(220_000)  # 120,000 + 10 kW × 10,000 per kW
    # Months 5-6: depreciation 22,000 + energy 10 × 730 × 1.2 × 0.1 = 876 + support 2,200; no rack rent.
    assert build.cost == pytest.approx([0, 0, 0, 0, 25_076, 25_076])
    assert build.met_from == 5 and build.space == 0


def test_rent_follows_the_shortfall_month_by_month():
    demand = [8 * HOURS, 12 * HOURS, 16 * HOURS, 16 * HOURS, 9 * HOURS, 8 * HOURS]
    rent = by_kind(sc.scenarios(demand, BASELINE, assumptions()))["rent"]
    # Whole nodes from month 2: 4 missing GPUs → 8 rented; 8 → 8; 1 → 8; none in the last month.
    assert rent.added_gpus == [0, 8, 8, 8, 8, 0]
    assert rent.rental == pytest.approx(4 * 8 * HOURS * 2.0)
    assert rent.capex == 0 and rent.nodes == 0
    assert rent.met_from == 1


def test_hybrid_owns_the_peak_and_rents_until_the_nodes_arrive_when_owning_is_cheaper():
    # 36 months, 48-month depreciation: an owned node-month costs 2,500 + 2,190 + 1,200 + 1,000 = 6,890, a rented
    # one 8 × 730 × 2 = 11,680: the hybrid owns the peak's node and rents only month 2, before it arrives.
    hybrid = by_kind(sc.scenarios([16 * HOURS] * 36, [8 * HOURS] * 36,
                                  assumptions(horizon=36, depreciation_months=48)))["hybrid"]
    assert hybrid.nodes == 1 and hybrid.added_gpus[:4] == [0, 8, 8, 8]  # rented in month 2, owned from month 3
    assert hybrid.rental == 8 * HOURS * 2.0
    assert hybrid.total_cost == pytest.approx(34 * 6_890 + 11_680)
    assert hybrid.met_from == 2 and hybrid.owned_from == 3
    assert "Owning the peak's 1 node is cheapest; it rents only until they arrive." in hybrid.notes


def test_hybrid_owns_nothing_when_renting_is_cheaper():
    # 6 months, 10-month depreciation: the node costs 16,390 a month, renting it 11,680: owning none is cheapest.
    results = by_kind(sc.scenarios(DEMAND, BASELINE, assumptions()))
    hybrid, rent = results["hybrid"], results["rent"]
    assert hybrid.nodes == 0 and hybrid.added_gpus == rent.added_gpus == [0, 8, 8, 8, 8, 8]
    assert hybrid.total_cost == rent.total_cost == 5 * 11_680
    assert hybrid.lead_months == 1  # it owns nothing: renting's lead time
    assert "Owning no node is cheapest over the horizon: the same as renting." in hybrid.notes


def test_recommendation_prices_unserved_hours_at_the_rental_rate():
    a = assumptions()
    results = sc.scenarios(DEMAND, BASELINE, a)
    rec = sc.recommend(DEMAND, BASELINE, results, a)
    # rent 58,400 + 5,840 unserved × 2 = 70,080 beats hybrid 77,240 + 11,680 and expand 65,560 + 23,360.
    assert rec.kind == "rent"
    assert "Rent: 58,400 USD over 6 months, 2.00 USD per useful GPU-hour, demand met from month 2" in rec.reasons[1]
    assert "Expand an existing site leaves 5,840 more GPU-hours unserved (lead time 2 months) and costs 7,160 USD " \
           "more (18,840 USD more once unserved hours are priced at the rental rate)." in rec.reasons
    assert "Hybrid: own the base, rent the peak comes out the same (0 USD more once unserved hours are priced at " \
           "the rental rate)." in rec.reasons  # it owns nothing: the same as renting
    # Over a long horizon, owning wins: the same demand for 36 months with 48-month depreciation. Expanding
    # alone scores the same as the hybrid here (the bridged month is priced at the rental rate either way);
    # the tie goes to the one that leaves fewer hours unserved.
    long = assumptions(horizon=36, depreciation_months=48)
    results = sc.scenarios([16 * HOURS] * 36, [8 * HOURS] * 36, long)
    assert sc.recommend([16 * HOURS] * 36, [8 * HOURS] * 36, results, long).kind == "hybrid"


def test_site_without_power_rules_out_expanding():
    a = assumptions(site_power_headroom_kw=5.0, horizon=36, depreciation_months=48)
    results = by_kind(sc.scenarios([16 * HOURS] * 36, [8 * HOURS] * 36, a))
    assert not results["expand"].feasible
    assert "1 nodes draw 10.0 kW; the site has 5.0 kW of power left." in results["expand"].notes
    # The hybrid owns what the site can power, here nothing: it rents all of it.
    hybrid = results["hybrid"]
    assert hybrid.feasible and hybrid.nodes == 0 and hybrid.total_cost == results["rent"].total_cost
    assert "The site's 5.0 kW of power left allow 0 of the 1 node." in hybrid.notes
    # With an unknown rental rate it owns the peak as before, which the site cannot power.
    unknown = by_kind(sc.scenarios([16 * HOURS] * 36, [8 * HOURS] * 36, replace(a, rental_rate=None)))["hybrid"]
    assert not unknown.feasible and unknown.nodes == 1
    rec = sc.recommend([16 * HOURS] * 36, [8 * HOURS] * 36, list(results.values()), a)
    assert rec.kind in ("build", "rent")
    assert any("is not possible" in r for r in rec.reasons)


def test_no_gap_no_purchase():
    a = assumptions()
    results = sc.scenarios(BASELINE, BASELINE, a)
    assert all(s.nodes == 0 and s.total_cost == 0 for s in results)
    rec = sc.recommend(BASELINE, BASELINE, results, a)
    assert rec.kind is None and rec.headline == "No new capacity needed within the horizon."


def test_target_utilization_sizes_for_headroom():
    # 16 GPUs of demand at 80 % utilization need 20 GPUs: 12 more than the 8 owned → 2 nodes.
    results = by_kind(sc.scenarios(DEMAND, BASELINE, assumptions(target_utilization=0.8)))
    assert results["expand"].nodes == 2
    assert sc.nodes_per_rack(assumptions()) == 4  # 40 kW / 10 kW per node, under 42 U / 8 U = 5


@pytest.mark.parametrize("lead", [1, 2, 3, 4, 5])
def test_longer_lead_never_serves_more(lead):
    a = assumptions()
    shorter = by_kind(sc.scenarios(DEMAND, BASELINE, replace(a, lead_expand=lead - 1)))["expand"]
    longer = by_kind(sc.scenarios(DEMAND, BASELINE, replace(a, lead_expand=lead)))["expand"]
    assert longer.useful_hours <= shorter.useful_hours
    assert longer.unmet_hours >= shorter.unmet_hours


def test_a_workload_inside_every_lead_time_is_not_served_for_free():
    # The bug of issue 18: 16 GPUs of demand in months 1-3 only, renting takes 3 months. Renting rents nothing
    # (no shortfall from month 4 on), costs 0 and serves nothing; expanding arrives in month 7, building in 10.
    # It was "Recommended: rent" with "Rent: 0 USD over 12 months, 17,520 GPU-hours unserved".
    demand, baseline = [16 * HOURS] * 3 + [8 * HOURS] * 9, [8 * HOURS] * 12
    a = assumptions(horizon=12, lead_rent=3, lead_expand=6, lead_build=9)
    results = by_kind(sc.scenarios(demand, baseline, a))
    rent = results["rent"]
    assert rent.total_cost == 0 and rent.unmet_hours == 3 * 8 * HOURS and rent.useful_hours == 0
    assert [s.available_from for s in results.values()] == [7, 10, 4, 4]
    rec = sc.recommend(demand, baseline, list(results.values()), a)
    assert rec.kind is None and rec.headline == "No option serves the demand within the horizon."
    assert rec.reasons[1] == ("No option serves all the demand within the horizon. The earliest each could add "
                              "capacity: expand an existing site from month 7; build a new cluster from month 10; "
                              "rent from month 4; hybrid: own the base, rent the peak from month 4.")
    assert not any("0 USD" in r for r in rec.reasons)


def test_demand_unserved_in_the_first_months_is_said_with_the_pick():
    # Renting takes a month: every option leaves month 1 unserved. Rent is still the pick, and the answer says
    # that nothing serves all the demand and from when each option could.
    a = assumptions()
    rec = sc.recommend(DEMAND, BASELINE, sc.scenarios(DEMAND, BASELINE, a), a)
    assert rec.kind == "rent"
    assert rec.headline == "Recommended: rent. No option serves all the demand within the horizon."
    assert ("expand an existing site from month 3; build a new cluster from month 5; rent from month 2; "
            "hybrid: own the base, rent the peak from month 2.") in rec.reasons[2]


def test_an_unknown_rental_rate_is_unknown_not_0():
    # Renting and expanding both start at once; the rental rate is unknown. Renting used to cost 0 and win.
    a = assumptions(rental_rate=None, lead_rent=0, lead_expand=0)
    results = by_kind(sc.scenarios(DEMAND, BASELINE, a))
    rent, expand = results["rent"], results["expand"]
    assert rent.rental is None and rent.total_cost is None and rent.total_cash is None
    assert rent.cost_per_useful_hour is None and rent.serves_demand and expand.serves_demand
    assert expand.total_cost == pytest.approx(6 * 16_390)  # no renting: its cost is known
    rec = sc.recommend(DEMAND, BASELINE, list(results.values()), a)
    assert rec.kind == "expand"
    assert "Rent cannot be compared on cost: no rental rate is known." in rec.reasons


def test_an_option_that_leaves_demand_unserved_is_never_picked_over_one_that_serves_it():
    # Expanding takes a month and leaves month 1 unserved; renting serves it all at an unknown rate: renting
    # wins, its cost said unknown, although the expansion's cost is known and unserved hours go unpriced.
    a = assumptions(rental_rate=None, lead_rent=0, lead_expand=1, lead_build=1)
    results = sc.scenarios(DEMAND, BASELINE, a)
    rec = sc.recommend(DEMAND, BASELINE, results, a)
    assert rec.kind in ("rent", "hybrid") and rec.headline.startswith("Recommended:")
    assert "cost unknown (no rental rate)" in rec.reasons[1] and "0 USD" not in rec.reasons[1]
