"""Who may do what in planning (see ``portal.policy``): beyond the model permissions of the roles, a capacity plan
is approved or rejected by a second manager, never by the one who submitted it."""

import rules

from portal.policy import has_model_perm

changes_plans = has_model_perm("planning.change_capacityplan")


@rules.predicate
def not_its_submitter(user, plan):
    """Four eyes: the user did not submit this plan (any user, given no plan)."""
    return plan is None or plan.submitted_by_id != user.pk


decides_plan = changes_plans & not_its_submitter

rules.add_perm("planning.decide_plan", decides_plan)  # approve or reject a submitted plan

# Confirm an estimated price of a bill of materials: those who edit plans, and procurement (who holds the quotes).
rules.add_perm("planning.confirm_bom_price", changes_plans | has_model_perm("planning.add_purchaseorder"))

# Act on a recommendation (notify the owning team, open a ticket): those who decide recommendations.
rules.add_perm("planning.act_on_recommendation", has_model_perm("planning.change_recommendation"))
