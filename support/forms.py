"""Ticket forms: a simple one for researchers, a full one for support staff; comments, attachments, status
changes and the RMA swap."""

import re
from pathlib import Path

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import Q
from django.template.defaultfilters import filesizeformat
from django.urls import reverse_lazy

from inventory.models import GPU, LifecycleState, Node, Team
from portal import files
from portal.forms import object_id

from .models import Ticket, TicketAttachment

# Extension -> content type, and the first bytes the file must start with (None: text, which may hold no NUL).
ATTACHMENT_TYPES = {
    ".txt": ("text/plain", None),
    ".log": ("text/plain", None),
    ".csv": ("text/csv", None),
    ".json": ("application/json", None),
    ".md": ("text/markdown", None),
    ".png": ("image/png", (b"\x89PNG\r\n\x1a\n",)),
    ".jpg": ("image/jpeg", (b"\xff\xd8\xff",)),
    ".jpeg": ("image/jpeg", (b"\xff\xd8\xff",)),
    ".pdf": ("application/pdf", (b"%PDF-",)),
    ".gz": ("application/gzip", (b"\x1f\x8b",)),
    ".tgz": ("application/gzip", (b"\x1f\x8b",)),
    ".zip": ("application/zip", (b"PK\x03\x04",)),
}


def staff_users():
    """Users who work tickets (support, managers, admins): the assignee choices."""
    perm = Permission.objects.filter(codename="work_ticket", content_type__app_label="support").first()
    users = get_user_model().objects.filter(is_active=True)
    return users.filter(Q(is_superuser=True) | Q(groups__permissions=perm) | Q(user_permissions=perm)) \
        .distinct().order_by("username")


def check_attachment(upload):
    """``(content type, size)`` of an acceptable upload; a ValidationError for one too big or of another type.
    The type comes from the extension and must agree with the file's first bytes (never the browser's word)."""
    limit = settings.SUPPORT_ATTACHMENT_MAX_BYTES
    if upload.size > limit:
        raise forms.ValidationError(f"The file is {filesizeformat(upload.size)}; the limit is {filesizeformat(limit)}.")
    return files.sniff_content_type(upload, ATTACHMENT_TYPES), upload.size


def save_attachment(ticket, upload, user, comment=None):
    content_type, size = check_attachment(upload)
    return TicketAttachment.objects.create(
        ticket=ticket, comment=comment, file=upload, name=Path(upload.name).name[:200], content_type=content_type,
        size=size, uploaded_by=user if user.is_authenticated else None,
    )


class AttachmentField(forms.FileField):
    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", f"Logs, screenshots, PDF, JSON, archives; up to "
                                       f"{filesizeformat(settings.SUPPORT_ATTACHMENT_MAX_BYTES)}.")
        super().__init__(**kwargs)

    def clean(self, data, initial=None):
        upload = super().clean(data, initial)
        if upload:
            check_attachment(upload)
        return upload


# --- The ticket's node and GPU: choices searched as one types -------------------------------------------------------

PICKER_LIMIT = 20  # rows a picker answers; the person types on to narrow them


def node_choices():
    """The nodes a ticket may name (not retired): the form's choices and what its picker searches."""
    return Node.objects.exclude(state=LifecycleState.RETIRED).order_by("hostname")


def gpu_choices():
    """The GPUs a ticket may name (not retired), by node and slot."""
    return GPU.objects.exclude(state=LifecycleState.RETIRED).select_related("node").order_by("node__hostname", "slot")


def search_nodes(term):
    term = term.strip()
    found = node_choices()
    if term:
        found = found.filter(Q(hostname__icontains=term) | Q(serial__icontains=term) | Q(asset_tag__icontains=term))
    return found


GPU_NAME = re.compile(r"(?P<host>[^/]*?)/?gpu(?P<slot>[0-9]{1,3})", re.IGNORECASE)


def search_gpus(term, node=None):
    """GPUs by their node's hostname, ``hostname/gpuN`` (as they are named), serial or UUID; on ``node`` only when
    given (the node the form has chosen)."""
    term, found = term.strip(), gpu_choices()
    if node is not None:
        found = found.filter(node_id=node)
    named = GPU_NAME.fullmatch(term)
    if named:  # "gpu3", "a100-001/gpu3": the slot, and the hostname when given
        found = found.filter(slot=int(named["slot"]))
        return found.filter(node__hostname__icontains=named["host"]) if named["host"] else found
    if term:
        found = found.filter(Q(node__hostname__icontains=term) | Q(serial__icontains=term) | Q(uuid__icontains=term))
    return found


# kind -> (the permission to read them, the search, a row's second line)
PICKERS = {
    "nodes": ("inventory.view_node", search_nodes, lambda node: node.get_state_display()),
    "gpus": ("inventory.view_gpu", search_gpus, lambda gpu: gpu.get_state_display()),
}


def picker_rows(kind, term, limit=PICKER_LIMIT, **filters):
    """``(rows, more)``: the first ``limit`` matches as ``{"id", "text", "detail"}`` (the text as the select names
    them), and whether there are more."""
    _, search, detail = PICKERS[kind]
    found = list(search(term, **filters)[:limit + 1])
    return [{"id": obj.pk, "text": str(obj), "detail": detail(obj)} for obj in found[:limit]], len(found) > limit


class PickerSelect(forms.Select):
    """A select holding only its chosen option, which ``portal/js/picker.js`` turns into a box that searches
    ``url`` as one types (a GPU select held 337 options); the field still checks the id against its queryset.
    ``narrow_by``: another field whose value narrows the search (a GPU on the chosen node)."""

    def __init__(self, url, narrow_by=None, attrs=None):
        super().__init__(attrs={**(attrs or {}), "data-picker": url, **({"data-picker-narrow": narrow_by}
                                                                          if narrow_by else {})})

    def optgroups(self, name, value, attrs=None):
        field = self.choices.field
        ids = [v for v in value if object_id(v)]
        chosen = list(self.choices.queryset.filter(pk__in=ids)[:1]) if ids else []
        options = [self.create_option(name, "", field.empty_label or "", not chosen, 0)]
        options += [self.create_option(name, str(obj.pk), field.label_from_instance(obj), True, 1) for obj in chosen]
        return [(None, options, 0)]


def asset_querysets(form):
    """The ticket's node and GPU: their choices, picked as one types."""
    pickers = {"node": ("nodes", node_choices, None), "gpu": ("gpus", gpu_choices, "node")}
    for name, (kind, choices, narrow_by) in pickers.items():
        if name in form.fields:
            field = form.fields[name]
            field.widget = PickerSelect(reverse_lazy("support:picker", args=[kind]), narrow_by=narrow_by)
            field.widget.is_required = field.required
            field.queryset = choices()  # gives the widget its choices too


class ResearcherTicketForm(forms.ModelForm):
    """What a researcher says: what is wrong, where, for which team."""

    attachment = AttachmentField()

    class Meta:
        model = Ticket
        fields = ["title", "category", "description", "node", "gpu", "team"]
        widgets = {"description": forms.Textarea(attrs={"rows": 8})}
        help_texts = {"node": "The node the problem is on, if one.", "gpu": "The GPU, if you know which."}

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        asset_querysets(self)
        self.fields["team"].queryset = user.teams.all() if user is not None else Team.objects.none()
        self.fields["team"].help_text = "Your team sees the ticket too."


class StaffTicketForm(forms.ModelForm):
    """Everything about a ticket but its status (changed through the workflow) and SLA clock."""

    attachment = AttachmentField()

    class Meta:
        model = Ticket
        fields = ["title", "category", "priority", "description", "requester", "team", "assignee", "site", "node",
                  "gpu", "switch", "storage_system", "rma_number"]
        widgets = {"description": forms.Textarea(attrs={"rows": 8})}

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        asset_querysets(self)
        self.fields["assignee"].queryset = staff_users()
        self.fields["requester"].queryset = get_user_model().objects.filter(is_active=True).order_by("username")


class CommentForm(forms.Form):
    body = forms.CharField(label="Comment", widget=forms.Textarea(attrs={"rows": 4}), help_text="Markdown.")
    internal = forms.BooleanField(required=False, label="Internal (support staff only)")
    attachment = AttachmentField()

    def __init__(self, *args, staff=False, **kwargs):
        super().__init__(*args, **kwargs)
        if not staff:
            del self.fields["internal"]


class StatusForm(forms.Form):
    status = forms.ChoiceField(choices=Ticket.Status.choices)
    note = forms.CharField(required=False, max_length=2000, widget=forms.TextInput(attrs={"placeholder": "Note"}))
    # Support staff give the vendor's RMA number with the move to "waiting on vendor" (one step, not an edit).
    rma_number = forms.CharField(required=False, max_length=100, label="RMA number")
    # The status the page showed: a move from a status that has changed since is refused, not applied.
    current = forms.ChoiceField(choices=Ticket.Status.choices, required=False)


class InlineForm(forms.Form):
    """One of status, priority or assignee, changed from a queue's row (htmx)."""

    status = forms.ChoiceField(choices=Ticket.Status.choices, required=False)
    priority = forms.ChoiceField(choices=Ticket.Priority.choices, required=False)
    assignee = forms.ModelChoiceField(queryset=None, required=False)
    current = forms.ChoiceField(choices=Ticket.Status.choices, required=False)  # the status the row showed

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["assignee"].queryset = staff_users()


class SwapForm(forms.Form):
    """Record an RMA swap: the part replaced and the new part's serial."""

    part = forms.ChoiceField(choices=[("gpu", "GPU"), ("node", "Node")])
    gpu = forms.ModelChoiceField(queryset=GPU.objects.none(), required=False, label="GPU replaced")
    serial = forms.CharField(max_length=100, label="New serial")
    uuid = forms.CharField(max_length=100, required=False, label="New GPU UUID")
    asset_tag = forms.CharField(max_length=100, required=False, label="New node asset tag")
    rma_number = forms.CharField(max_length=100, required=False, label="RMA number")

    def __init__(self, *args, ticket=None, **kwargs):
        super().__init__(*args, **kwargs)
        node = ticket.node if ticket is not None else None
        if node is not None:
            self.fields["gpu"].queryset = node.gpus.exclude(state=LifecycleState.RETIRED).select_related("node")
        if ticket is not None:
            self.fields["gpu"].initial = ticket.gpu_id
            self.fields["rma_number"].initial = ticket.rma_number
            self.fields["part"].initial = "gpu" if ticket.gpu_id else "node"

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("part") == "gpu" and not cleaned.get("gpu"):
            self.add_error("gpu", "Choose the GPU that was replaced.")
        return cleaned
