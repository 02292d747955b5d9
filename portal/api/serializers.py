import copy

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers


class PortalModelSerializer(serializers.ModelSerializer):
    """Base for every model's serializer.

    - ``url`` points at the object's API detail route (``<app>-api:<model>-detail``), ``display`` is
      its human name.
    - ``validate`` runs the model's own ``clean()`` so the API refuses exactly what the forms refuse,
      with the same field errors (rack height, GPU slots, ...).
    """

    display = serializers.CharField(source="__str__", read_only=True)

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
        return attrs
