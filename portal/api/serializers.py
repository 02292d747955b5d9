import copy

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import router
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import ResolvedComponent, build_choice_field
from drf_spectacular.settings import spectacular_settings
from rest_framework import serializers
from rest_framework.settings import api_settings

from portal.history import REASON_MAX_LENGTH
from portal.roles import sees_outbound_errors

COMMON = ["id", "url", "display"]  # every serializer's first fields, and the brief (nested) form's
TIMESTAMPS = ["created", "updated"]


class OutboundErrorsMixin:
    """A serializer whose ``outbound_error_fields`` (errors of outbound calls) are null for users without
    ``outbound_errors_permission`` (``portal.roles.sees_outbound_errors``); nested serializers get the same
    request from the context."""

    outbound_error_fields = ()
    outbound_errors_permission = ""

    def get_fields(self):
        fields = super().get_fields()
        for name in self.outbound_error_fields:
            if name in fields:
                fields[name].allow_null = True  # so the schema says they may be null
        return fields

    def to_representation(self, instance):
        data = super().to_representation(instance)
        request = self.context.get("request")
        if not sees_outbound_errors(getattr(request, "user", None), self.outbound_errors_permission):
            for name in self.outbound_error_fields:
                if name in data:
                    data[name] = None
        return data


class PortalModelSerializer(serializers.ModelSerializer):
    """Base for every model's serializer.

    - ``url`` points at the object's API detail route (``<app>-api:<model>-detail``), ``display`` is
      its human name.
    - ``validate`` runs the model's own ``clean()`` so the API refuses exactly what the forms refuse,
      with the same field errors (rack height, GPU slots, ...), then the model's constraints
      (``validate_constraints``), so a constraint DRF does not check itself (a conditional or
      expression ``UniqueConstraint``, a ``CheckConstraint``) is a 400 with a field error, not a
      database error.
    - ``change_reason`` (write-only, on every write) is stored with the change records (``portal.history``).
    - ``?fields=a,b`` or ``?brief=1`` on a GET trims the answer to those fields (brief: ``id``, ``url``,
      ``display`` and ``Meta.brief_fields``). Trimming only leaves work out, so it never costs a query.
    """

    display = serializers.CharField(source="__str__", read_only=True)

    def get_fields(self):
        fields = super().get_fields()
        fields["change_reason"] = serializers.CharField(
            write_only=True, required=False, allow_blank=True, max_length=REASON_MAX_LENGTH,
            help_text="Why you make this change: stored with the change records (or send the X-Change-Reason header).",
        )
        return fields

    @property
    def _readable_fields(self):
        # What to_representation() walks: leaving a field out here skips its work (and its queries).
        readable = list(super()._readable_fields)
        wanted = wanted_fields(self, [field.field_name for field in readable])
        return readable if wanted is None else [field for field in readable if field.field_name in wanted]

    def to_internal_value(self, data):
        attrs = super().to_internal_value(data)
        reason = attrs.pop("change_reason", "")
        request = self.context.get("request")
        if request is not None:
            # Read by portal.history when the change record is written; one per item in a bulk request.
            getattr(request, "_request", request).change_reason = reason
        return attrs

    def build_url_field(self, field_name, model_class):
        opts = model_class._meta
        return serializers.HyperlinkedIdentityField, {"view_name": f"{opts.app_label}-api:{opts.model_name}-detail"}

    def validate(self, attrs):
        attrs = super().validate(attrs)
        model = self.Meta.model
        instance = copy.copy(self.instance) if self.instance is not None else model()
        many_to_many = {f.name for f in model._meta.many_to_many}
        for key, value in attrs.items():
            if key not in many_to_many:
                setattr(instance, key, value)
        try:
            instance.clean()
        except DjangoValidationError as error:
            raise serializers.ValidationError(serializers.as_serializer_error(error)) from error
        errors = constraint_errors(instance)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


def wanted_fields(serializer, readable):
    """The field names ``?fields=`` / ``?brief=1`` ask for (None: all), for the serializer of a GET's
    answer (the top one, or each item of a list); nested serializers keep all theirs."""
    request = serializer.context.get("request")
    parent = serializer.parent
    top = parent is None or (isinstance(parent, serializers.ListSerializer) and parent.parent is None)
    if request is None or request.method != "GET" or not top:
        return None
    params = request.query_params
    if params.get("brief") in ("1", "true"):
        return {*COMMON, *getattr(serializer.Meta, "brief_fields", ())}
    if not params.get("fields"):
        return None
    wanted = {name.strip() for name in params["fields"].split(",") if name.strip()}
    unknown = sorted(wanted - set(readable))
    if unknown:
        raise serializers.ValidationError(
            {"fields": [f"Unknown field(s): {', '.join(unknown)}. Available: {', '.join(readable)}."]}
        )
    return wanted


def constraint_errors(instance):
    """The model's constraints that ``instance`` (saved or not) violates, as DRF field errors.

    Unlike ``Model.validate_constraints``, which files a conditional ``UniqueConstraint`` under
    ``__all__``, an error of a one-field constraint goes to that field; others go to
    ``non_field_errors``.
    """
    errors = {}
    for model_class, constraints in instance.get_constraints():
        using = router.db_for_write(model_class, instance=instance)
        for constraint in constraints:
            try:
                constraint.validate(model_class, instance, using=using)
            except DjangoValidationError as error:
                fields = getattr(constraint, "fields", ())
                key = fields[0] if len(fields) == 1 else api_settings.NON_FIELD_ERRORS_KEY
                errors.setdefault(key, []).extend(error.messages)
    return errors


class EnumChoiceField(serializers.ChoiceField):
    """A choice field over a ``TextChoices`` class: ``state = EnumChoiceField(LifecycleState)``.

    The schema documents every such field as one shared component named after the class
    (``LifecycleStateEnum``), whatever the fields are called (``state``, ``to``, ``from_state``);
    plain choice fields sharing a choice set under several names make drf-spectacular warn.
    """

    def __init__(self, enum, **kwargs):
        assert not kwargs.get("allow_null"), "EnumChoiceField does not document null; use allow_blank."
        self.enum = enum
        super().__init__(choices=enum.choices, **kwargs)


class EnumChoiceFieldExtension(OpenApiSerializerFieldExtension):
    target_class = EnumChoiceField

    def map_serializer_field(self, auto_schema, direction):
        field = self.target
        schema = build_choice_field(serializers.ChoiceField(choices=field.enum.choices))
        schema.pop("x-spec-enum-id", None)
        component = ResolvedComponent(
            name=f"{field.enum.__name__}{spectacular_settings.ENUM_SUFFIX}", type=ResolvedComponent.SCHEMA,
            schema=schema, object=field.enum,
        )
        auto_schema.registry.register_on_missing(component)
        if field.allow_blank:
            return {"oneOf": [component.ref, {"type": "string", "enum": [""]}]}
        return component.ref
