"""Contract forms: the contract with its coverage and SLA terms, and document uploads.

Validation of the contract itself (end after start, currency, rentals) lives in ``Contract.clean``, so pages, API
and admin refuse the same things with the same messages."""

from pathlib import Path

from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat

from inventory.models import GPU, Node
from portal import files
from portal.forms import DateInput

from .coverage import purchase_conflicts
from .models import Contract, ContractDocument, SLATerm

# Extension -> content type, and the first bytes a file of that type must start with (None: text).
DOCUMENT_TYPES = {
    ".pdf": ("application/pdf", (b"%PDF-",)),
    ".png": ("image/png", (b"\x89PNG\r\n\x1a\n",)),
    ".jpg": ("image/jpeg", (b"\xff\xd8\xff",)),
    ".jpeg": ("image/jpeg", (b"\xff\xd8\xff",)),
    ".txt": ("text/plain", None),
    ".csv": ("text/csv", None),
    ".docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", (b"PK\x03\x04",)),
    ".xlsx": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", (b"PK\x03\x04",)),
    ".pptx": ("application/vnd.openxmlformats-officedocument.presentationml.presentation", (b"PK\x03\x04",)),
    ".odt": ("application/vnd.oasis.opendocument.text", (b"PK\x03\x04",)),
    ".ods": ("application/vnd.oasis.opendocument.spreadsheet", (b"PK\x03\x04",)),
    ".doc": ("application/msword", (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",)),
    ".xls": ("application/vnd.ms-excel", (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",)),
}


class ContractDocumentForm(forms.ModelForm):
    class Meta:
        model = ContractDocument
        fields = ["file", "name"]
        help_texts = {"name": "Optional: the file name is used when empty."}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["name"].required = False
        self.fields["file"].help_text = (
            f"PDF, PNG, JPEG, text, CSV or Office documents, up to {filesizeformat(self.max_bytes())}."
        )

    @staticmethod
    def max_bytes():
        return settings.CONTRACT_DOCUMENT_MAX_BYTES

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > self.max_bytes():
            raise forms.ValidationError(
                f"The file is {filesizeformat(upload.size)}; the limit is {filesizeformat(self.max_bytes())}."
            )
        self.instance.content_type = files.sniff_content_type(upload, DOCUMENT_TYPES)
        self.instance.size = upload.size
        return upload

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("file") and not cleaned.get("name"):
            cleaned["name"] = Path(cleaned["file"].name).name[:200]
        return cleaned


class GroupedChoiceIterator(forms.models.ModelChoiceIterator):
    def __iter__(self):
        groups = {}
        for obj in self.queryset:
            groups.setdefault(self.field.group(obj), []).append(self.choice(obj))
        yield from groups.items()


class GroupedMultipleChoiceField(forms.ModelMultipleChoiceField):
    """A multi-select whose options are grouped (``<optgroup>``) by ``group(obj)``, e.g. nodes by site."""

    iterator = GroupedChoiceIterator

    def __init__(self, queryset, group, **kwargs):
        super().__init__(queryset, **kwargs)
        self.group = group


MULTI = {"size": 8}


class ContractForm(forms.ModelForm):
    nodes = GroupedMultipleChoiceField(
        Node.objects.select_related("site").order_by("site__name", "hostname"), lambda node: node.site.name,
        required=False, widget=forms.SelectMultiple(attrs={"size": 12}),
        help_text="Grouped by site. Nodes in a covered site or rack are covered already.",
    )
    gpus = GroupedMultipleChoiceField(
        GPU.objects.select_related("node").order_by("node__hostname", "slot"),
        lambda gpu: gpu.node.hostname if gpu.node_id else "spare", required=False, label="GPUs",
        widget=forms.SelectMultiple(attrs=MULTI),
        help_text="Grouped by node. GPUs in a covered node, rack or site are covered already.",
    )

    class Meta:
        model = Contract
        fields = ["kind", "vendor", "reference", "title", "owner", "start", "end", "notice_days", "auto_renew",
                  "one_off_cost", "monthly_cost", "gpu_hour_cost", "currency", "depreciation_months", "rented_gpus",
                  "rented_gpu_model", "sites", "racks", "nodes", "gpus", "switches", "storage_systems", "notes"]
        widgets = {
            "start": DateInput(), "end": DateInput(), "notes": forms.Textarea(attrs={"rows": 3}),
            "sites": forms.SelectMultiple(attrs=MULTI), "racks": forms.SelectMultiple(attrs=MULTI),
            "switches": forms.SelectMultiple(attrs=MULTI), "storage_systems": forms.SelectMultiple(attrs=MULTI),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["racks"].queryset = self.fields["racks"].queryset.select_related("site")
        self.fields["switches"].queryset = self.fields["switches"].queryset.select_related("site")

    def clean_currency(self):
        return self.cleaned_data["currency"].upper()

    def clean(self):
        cleaned = super().clean()
        nodes, gpus = cleaned.get("nodes"), cleaned.get("gpus")
        conflicts = purchase_conflicts(self.instance, [n.pk for n in nodes or ()], [g.pk for g in gpus or ()],
                                       kind=cleaned.get("kind"))
        for field, messages in conflicts.items():
            for message in messages:
                self.add_error(field, message)
        return cleaned


SLATermFormSet = forms.inlineformset_factory(
    Contract, SLATerm, fields=["priority", "response_hours", "resolution_hours"], extra=4, max_num=4,
    validate_max=True, can_delete=True,
)
