"""Build / expand / rent / hybrid scenarios against hand-computed figures, and the recommendation."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planning.plans import decision
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
    rec = decision.recommend(DEMAND, BASELINE, results, a)
    # rent 58,400 + 5,840 unserved × 2 = 70,080 beats hybrid 77,240 + 11,680 and expand 65,560 + 23,360.
    assert rec.kind == "rent"
    assert "Rent: 58,400 USD over 6 months, 2.00 USD per useful GPU-hour, demand met from month 2" in rec.reasons[1]
    assert "Expand an existing site leaves 5,840 more GPU-hours unserved (lead time 2 months) and costs 7,160 USD " \
           "more (18,840 USD more once unserved hours are priced at 2.00 USD each)." in rec.reasons
    assert "Hybrid: own the base, rent the peak comes out the same (0 USD more once unserved hours are priced at " \
           "2.00 USD each)." in rec.reasons  # it owns nothing: the same as renting
    assert "Options are compared on their cost plus the GPU-hours they leave unserved at 2.00 USD each (the rental " \
           "rate)." in rec.reasons
    # Over a long horizon, owning wins: the same demand for 36 months with 48-month depreciation. Expanding
    # alone scores the same as the hybrid here (the bridged month is priced at the rental rate either way);
    # the tie goes to the one that leaves fewer hours unserved.
    long = assumptions(horizon=36, depreciation_months=48)
    results = sc.scenarios([16 * HOURS] * 36, [8 * HOURS] * 36, long)
    assert decision.recommend([16 * HOURS] * 36, [8 * HOURS] * 36, results, long).kind == "hybrid"


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
    rec = decision.recommend([16 * HOURS] * 36, [8 * HOURS] * 36, list(results.values()), a)
    assert rec.kind in ("build", "rent")
    assert any("is not possible" in r for r in rec.reasons)


def test_no_gap_no_purchase():
    a = assumptions()
    results = sc.scenarios(BASELINE, BASELINE, a)
    assert all(s.nodes == 0 and s.total_cost == 0 for s in results)
    rec = decision.recommend(BASELINE, BASELINE, results, a)
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
    rec = decision.recommend(demand, baseline, list(results.values()), a)
    assert rec.kind is None and rec.headline == ("No option can serve the demand within the horizon: the 17,520 "
                                                 "GPU-hours short fall before any option could add capacity.")
    assert rec.unavoidable_hours == 3 * 8 * HOURS and rec.scenario is None
    assert rec.reasons[1] == ("No option serves any of the demand within the horizon. The earliest each could add "
                              "capacity: expand an existing site from month 7; build a new cluster from month 10; "
                              "rent from month 4; hybrid: own the base, rent the peak from month 4.")
    assert not any("0 USD" in r for r in rec.reasons)


def test_demand_unserved_in_the_first_months_is_said_with_the_pick():
    # Renting takes a month: every option leaves month 1 unserved. Rent is still the pick; the answer says it meets
    # the demand from month 2 and that month 1 cannot be served by any option (it used to say both "demand met from
    # month 2" and "No option serves all the demand").
    a = assumptions()
    rec = decision.recommend(DEMAND, BASELINE, sc.scenarios(DEMAND, BASELINE, a), a)
    assert rec.kind == "rent" and rec.unavoidable_hours == 8 * HOURS == rec.scenario.unmet_hours
    assert rec.headline == ("Recommended: rent (up to 8 GPUs rented). Demand met from month 2; the 5,840 GPU-hours "
                            "short before then cannot be served by any option (the quickest, rent, adds capacity "
                            "from month 2).")


def test_an_unknown_rental_rate_is_unknown_not_0():
    # Renting and expanding both start at once; the rental rate is unknown. Renting used to cost 0 and win.
    a = assumptions(rental_rate=None, lead_rent=0, lead_expand=0)
    results = by_kind(sc.scenarios(DEMAND, BASELINE, a))
    rent, expand = results["rent"], results["expand"]
    assert rent.rental is None and rent.total_cost is None and rent.total_cash is None
    assert rent.cost_per_useful_hour is None and rent.serves_demand and expand.serves_demand
    assert expand.total_cost == pytest.approx(6 * 16_390)  # no renting: its cost is known
    rec = decision.recommend(DEMAND, BASELINE, list(results.values()), a)
    assert rec.kind == "expand"
    assert "Rent cannot be compared on cost: no rental rate is known." in rec.reasons


def test_an_option_that_leaves_demand_unserved_is_never_picked_over_one_that_serves_it():
    # Expanding takes a month and leaves month 1 unserved; renting serves it all at an unknown rate: renting
    # wins, its cost said unknown, although the expansion's cost is known and unserved hours go unpriced.
    a = assumptions(rental_rate=None, lead_rent=0, lead_expand=1, lead_build=1)
    results = sc.scenarios(DEMAND, BASELINE, a)
    rec = decision.recommend(DEMAND, BASELINE, results, a)
    assert rec.kind in ("rent", "hybrid") and rec.headline.startswith("Recommended:")
    assert "cost unknown (no rental rate)" in rec.reasons[1] and "0 USD" not in rec.reasons[1]


# --- A short peak: own the base, rent the peak ---------------------------------------------------------------

# 24 months: 16 GPUs busy (8 more than the fleet's 8: one node), and in months 12-13 48 GPUs, 3× (40 more: five
# nodes). Renting and expanding both start at once, so every option serves all the demand: only cost decides.
PEAKY = [16 * HOURS] * 11 + [48 * HOURS] * 2 + [16 * HOURS] * 11
BASE24 = [8 * HOURS] * 24


def peaky(**kw):
    return assumptions(horizon=24, depreciation_months=48, lead_rent=0, lead_expand=0, **kw)


def test_utilization_of_the_added_capacity_by_hand():
    results = by_kind(sc.scenarios(PEAKY, BASE24, peaky()))
    expand = results["expand"]
    # Five nodes (40 GPUs) from month 1: 40 × 730 × 24 = 700,800 GPU-hours; demand fills 8 GPUs of them in 22
    # months and all 40 in two: 730 × (8 × 22 + 40 × 2) = 186,880, 26.7 %.
    assert expand.nodes == 5 and expand.owned_from == 1
    assert expand.owned_hours == 700_800 and expand.owned_useful_hours == 186_880
    assert expand.owned_utilization == pytest.approx(186_880 / 700_800)
    assert expand.rented_hours == 0 and expand.rented_utilization is None
    # Month cost: depreciation 600,000 / 48 = 12,500, support 6,000, two racks 2,000, energy 5 × 10 kW × (0.5 +
    # 0.5 × load) × 730 × 1.5 × 0.2: load 0.2 → 6,570, at the peak load 1 → 10,950.
    assert expand.total_cost == pytest.approx(22 * (12_500 + 6_000 + 2_000 + 6_570) + 2 * (12_500 + 6_000 + 2_000
                                                                                           + 10_950))  # 658,440
    assert expand.underused
    assert "The 5 added nodes would be 27 % used over the horizon, below the plan's lowest utilization of 30 %." \
        in expand.notes
    rent = results["rent"]
    # Renting follows the shortfall: 1 node, 5 at the peak, every GPU rented serves demand.
    assert rent.rented_hours == 730 * (8 * 22 + 40 * 2) == rent.rented_useful_hours and rent.rented_utilization == 1
    assert rent.owned_utilization is None and not rent.underused
    assert rent.total_cost == pytest.approx(730 * (8 * 22 + 40 * 2) * 2.0)  # 373,760


def test_hybrid_owns_the_base_and_rents_the_short_peak_by_hand():
    a = peaky()
    results = by_kind(sc.scenarios(PEAKY, BASE24, a))
    hybrid = results["hybrid"]
    # k = 1: one owned node a month costs 2,500 + 2,190 (load 1) + 1,200 + one rack 1,000 = 6,890, × 24 = 165,360;
    # the peak's other 4 nodes rented for 2 months: 4 × 11,680 × 2 = 93,440. Total 258,800.
    # k = 0 is renting (373,760); k = 2 costs 22 × 11,685 + 2 × 12,780 + 3 × 11,680 × 2 = 352,710; k = 5 is the
    # expansion (658,440).
    assert hybrid.nodes == 1
    assert hybrid.total_cost == pytest.approx(24 * 6_890 + 4 * 11_680 * 2) == 258_800
    assert hybrid.capex == pytest.approx(120_000) and hybrid.rental == 93_440
    assert hybrid.added_gpus == [8] * 11 + [40] * 2 + [8] * 11
    assert hybrid.owned_utilization == 1 and hybrid.rented_hours == 2 * 32 * HOURS == hybrid.rented_useful_hours
    assert hybrid.unmet_hours == 0 and not hybrid.underused
    assert "Owns 1 of the peak's 5 nodes from month 1 and rents the rest month by month." in hybrid.notes
    for k, cost in ((0, 373_760), (2, 352_710), (5, 658_440)):  # the ones it did not choose, by hand
        other = sc._scenario("hybrid", PEAKY, BASE24, a, k, a.lead_expand, rent_until=25)
        assert other.total_cost == pytest.approx(cost)

    rec = decision.recommend(PEAKY, BASE24, list(results.values()), a)
    assert rec.kind == "hybrid" and rec.headline == ("Recommended: hybrid: own the base, rent the peak (1 node "
                                                     "bought, up to 32 GPUs rented). It serves all the demand.")
    assert rec.reasons[1] == ("Hybrid: own the base, rent the peak: 258,800 USD over 24 months, 1.38 USD per useful "
                              "GPU-hour, demand met from month 1.")  # 258,800 / 186,880
    assert rec.reasons[2] == ("Owning 1 node for the base and renting the peak above it (46,720 GPU-hours rented) "
                              "costs 399,640 USD less than buying the peak's 5 nodes.")
    assert "Expand an existing site costs 399,640 USD more (399,640 USD more once unserved hours are priced at " \
           "2.00 USD each)." in rec.reasons
    assert not any("lowest utilization" in r for r in rec.reasons)  # the hybrid's node is used in full


def test_hardware_below_the_lowest_utilization_is_never_recommended_silently():
    # At 20 per GPU-hour renting even the peak costs more than owning it: the hybrid owns all five nodes, the
    # same as expanding, and the tie goes to expanding. Its nodes are 27 % used: the reasons and headline say so.
    a = peaky(rental_rate=20.0)
    results = by_kind(sc.scenarios(PEAKY, BASE24, a))
    assert results["hybrid"].nodes == 5 and results["hybrid"].total_cost == pytest.approx(658_440)
    rec = decision.recommend(PEAKY, BASE24, list(results.values()), a)
    assert rec.kind == "expand"
    assert rec.headline == ("Recommended: expand an existing site (5 nodes bought). It serves all the demand. "
                            "Warning: the 5 added nodes would be 27 % used over the horizon.")
    assert ("The 5 added nodes would be 27 % used over the horizon, below the plan's lowest utilization of 30 %: "
            "sized to a peak of 2 months; all 5 are needed in 2 of the 24 months from their arrival in month 1.") \
        in rec.reasons
    # A lower threshold: nothing to say.
    low = peaky(rental_rate=20.0, min_utilization=0.25)
    rec = decision.recommend(PEAKY, BASE24, sc.scenarios(PEAKY, BASE24, low), low)
    assert rec.kind == "expand" and "Warning" not in rec.headline
    assert not any("lowest utilization" in r for r in rec.reasons)


def test_a_peak_over_before_the_hardware_arrives_does_not_size_it():
    # The peak is in months 2-3; expanding takes 4 months, and no rental can be had within the horizon. The nodes
    # are sized to the months from their arrival (8 GPUs short: 1 node), not to the peak they miss (5 nodes, which
    # would sit 20 % used); the peak goes unserved whatever is chosen and the headline says so.
    demand = [16 * HOURS] + [48 * HOURS] * 2 + [16 * HOURS] * 9
    a = assumptions(horizon=12, depreciation_months=48, rental_rate=None, lead_expand=4, lead_build=12, lead_rent=12)
    results = sc.scenarios(demand, [8 * HOURS] * 12, a)
    rec = decision.recommend(demand, [8 * HOURS] * 12, results, a)
    expand = by_kind(results)["expand"]
    assert expand.nodes == 1 and expand.owned_utilization == 1 and expand.owned_from == 5
    assert rec.kind == "expand" and not expand.underused
    # Months 1-4 are short 8 + 40 + 40 + 8 GPUs: 96 × 730 = 70,080 GPU-hours no option can serve.
    assert rec.unavoidable_hours == expand.unmet_hours == 96 * HOURS
    assert rec.headline == ("Recommended: expand an existing site (1 node bought). Demand met from month 5; the "
                            "70,080 GPU-hours short before then cannot be served by any option (the quickest, expand "
                            "an existing site, adds capacity from month 5).")


# --- Properties over random demands -----------------------------------------------------------------------------

gpus = st.integers(min_value=0, max_value=64)


@settings(max_examples=150, deadline=None)
@given(demand=st.lists(gpus, min_size=1, max_size=12), base=gpus, lead_rent=st.integers(0, 4),
       lead_expand=st.integers(0, 6), rate=st.floats(0.1, 30), price=st.floats(10_000, 500_000),
       target=st.sampled_from([0.6, 0.8, 1.0]))
def test_hybrid_is_never_dearer_than_both_and_nothing_serves_more_than_there_is(demand, base, lead_rent, lead_expand,
                                                                              rate, price, target):
    months = len(demand)
    demand, baseline = [g * HOURS for g in demand], [base * HOURS] * months
    a = assumptions(horizon=months, lead_rent=lead_rent, lead_expand=lead_expand, rental_rate=rate, node_price=price,
                    target_utilization=target, site_power_headroom_kw=None, depreciation_months=24)
    results = by_kind(sc.scenarios(demand, baseline, a))
    expand, rent, hybrid = results["expand"], results["rent"], results["hybrid"]
    assert 0 <= hybrid.nodes <= expand.nodes
    assert hybrid.total_cost <= max(expand.total_cost, rent.total_cost) + 0.01
    # It can own nothing (renting) or the peak (expanding, plus renting until the nodes arrive).
    assert sc.score(hybrid, a) <= sc.score(rent, a) + 0.01
    if lead_rent <= lead_expand:  # as many hours unserved whatever it owns: the cost decides
        assert hybrid.total_cost <= rent.total_cost + 0.01
    if lead_rent >= lead_expand:  # owning the peak rents nothing: the expansion itself
        assert hybrid.total_cost <= expand.total_cost + 0.01
    for s in results.values():
        served = [min(d, c) for d, c in zip(demand, s.capacity, strict=True)]
        assert sum(served) <= sum(demand) + 1e-6
        assert all(x <= c + 1e-6 for x, c in zip(served, s.capacity, strict=True))
        assert s.useful_hours == pytest.approx(s.owned_useful_hours + s.rented_useful_hours, abs=1e-6)
        assert s.useful_hours <= sum(demand) - sc.served(demand, baseline, target) + 1e-6
        assert 0 <= s.owned_useful_hours <= s.owned_hours + 1e-6
        assert 0 <= s.rented_useful_hours <= s.rented_hours + 1e-6
        for share in (s.owned_utilization, s.rented_utilization, s.utilization):
            assert share is None or 0 <= share <= 1 + 1e-9
