"""drf-spectacular's schema generator, plus what ``PortalModelViewSet`` adds to every model's API:
ETags and conditional requests, the change-reason header, and the bulk operations on list routes."""

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

from portal.history import REASON_HEADER

JSON = "application/json"

ETAG = OpenApiParameter(
    "ETag", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[200],
    description="The object's version; send it back in `If-Match` to change the object only if nobody else has.",
)
IF_MATCH = OpenApiParameter(
    "If-Match", OpenApiTypes.STR, OpenApiParameter.HEADER,
    description="The ETag you read. If the object has changed since, the request is refused with 412 and "
                "changes nothing.",
)
IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match", OpenApiTypes.STR, OpenApiParameter.HEADER,
    description="The ETag you have: 304 without a body while the object is unchanged.",
)
REASON = OpenApiParameter(
    REASON_HEADER, OpenApiTypes.STR, OpenApiParameter.HEADER,
    description="Why you make this change (at most 100 characters): stored with the change records, as is "
                "the request id (`X-Request-ID`) that all changes of this request share.",
)
DETAIL = {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]}
BULK_ACTIONS = {"bulk_update": "bulk_update", "bulk_partial_update": "bulk_partial_update",
                "bulk_destroy": "bulk_destroy"}
ID_ITEM = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}


def _array(items):
    from .viewsets import MAX_BULK_ITEMS  # not at the top: the viewsets' classes need this module

    return {"type": "array", "items": items, "minItems": 1, "maxItems": MAX_BULK_ITEMS}


# DRF's validation errors: field name → messages (``non_field_errors`` for the object as a whole; a nested list's
# errors per item), or a list of messages. The object is a component of its own so that a generated client has
# a model to parse it into (an inline object in a oneOf becomes ``ValidationErrorType0``).
FIELD_ERRORS = {
    "type": "object", "additionalProperties": {},
    "description": "Field name → list of messages (`non_field_errors`: the object as a whole; a nested list's "
                   "errors per item). A refusal of the request as a whole has `detail` instead.",
}
FIELD_ERRORS_REF = {"$ref": "#/components/schemas/FieldErrors"}
VALIDATION_ERROR = {
    "oneOf": [FIELD_ERRORS_REF, {"type": "array", "items": {}}],
    "description": "Field errors, or a list of messages.",
}


class PortalAutoSchema(AutoSchema):
    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is not None:
            self._add_error_responses(operation)
        return operation

    def _add_error_responses(self, operation):
        """The errors DRF and the portal answer on their own, on every operation they can come from (an
        operation's own description of a code wins): 401 without valid credentials, 403 without the
        permission, 406 for an unknown API version, 404 for an object that does not exist (or a page past
        the end), 400 for an invalid body or query parameter, 409 for a delete of an object still in use,
        413 for a body over the size limit, 415 for a body of another media type. Undocumented, a client (or
        schemathesis) cannot tell an answer the API promises from a bug. Every error code gets its JSON body
        (``Error``; 400: ``ValidationError``), those an operation documents itself included."""
        responses = operation["responses"]
        has_body = "requestBody" in operation
        has_query = any(p["in"] == "query" for p in operation.get("parameters", ()))
        paginated = self.method == "GET" and self._is_list_view() and self._get_paginator() is not None
        errors = {
            "400": (has_body or has_query, "ValidationError", "Invalid request."),
            "401": (True, "Error", "Missing, invalid or expired credentials."),
            "403": (True, "Error", "Not allowed for your role."),
            "404": ("{" in self.path or paginated, "Error", "No such object (or no such page)."),
            "406": (True, "Error", "Unknown API version in the Accept header."),
            "409": (self._portal_action() in ("destroy", "bulk_destroy"), "Error",
                    "Still used by other objects (they are named); nothing was deleted."),
            "413": (has_body, "Error", "The request body is over the size limit."),
            "415": (has_body, "Error", "Unsupported media type of the request body."),
        }
        for code, (applies, name, description) in errors.items():
            if applies and code not in responses:
                responses[code] = {"description": description, "content": {JSON: {"schema": self._error(name)}}}
        # Codes an operation documents with a description alone (``OpenApiResponse(description=...)``: 400, 409,
        # 412, 422, ...) get the body the portal answers them with, or a generated client cannot parse them.
        for code, response in responses.items():
            if code[0] in "45" and not response.get("content"):
                response["content"] = {JSON: {"schema": self._error("ValidationError" if code == "400" else "Error")}}

    def _error(self, name):
        """A reference to the error component ``name`` (``Error`` or ``ValidationError``), registered once."""
        schemas = {"Error": DETAIL, "ValidationError": VALIDATION_ERROR}
        if name == "ValidationError":
            self.registry.register_on_missing(ResolvedComponent(
                name="FieldErrors", type=ResolvedComponent.SCHEMA, object="FieldErrors", schema=FIELD_ERRORS))
        component = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, object=name, schema=schemas[name])
        self.registry.register_on_missing(component)
        return component.ref

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        """A field's ``schema_limits`` (minimum, maximum, ... that its serializer checks in ``validate``) join its
        schema."""
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        return {**schema, **getattr(field, "schema_limits", {})}

    def _portal_action(self):
        from .viewsets import PortalModelViewSet  # not at the top: the viewsets' classes need this module

        return getattr(self.view, "action", None) if isinstance(self.view, PortalModelViewSet) else None

    def get_operation_id(self):
        action = self._portal_action()
        if action in BULK_ACTIONS:
            return "_".join([t.replace("-", "_") for t in self._tokenize_path()] + [BULK_ACTIONS[action]])
        return super().get_operation_id()

    def get_description(self):
        extra = {
            "create": "Send a list of objects instead of one to create them all in one transaction: if any is "
                      "invalid, nothing is saved and the 400 lists the errors of each item (`{}` for valid ones).",
            "bulk_update": "Replaces each listed object (each item carries its `id`); one transaction, errors per "
                           "item.",
            "bulk_partial_update": "Changes the given fields of each listed object (each item carries its `id`); "
                                   "one transaction, errors per item.",
            "bulk_destroy": "Deletes the listed objects (ids, or objects with an `id`); one transaction, errors per "
                            "item.",
        }.get(self._portal_action())
        description = super().get_description()
        return "\n\n".join(part for part in (description, extra) if part)

    def get_override_parameters(self):
        params = list(super().get_override_parameters())
        action = self._portal_action()
        if action in ("retrieve", "update", "partial_update"):
            params.append(ETAG)
        if action == "retrieve":
            params.append(IF_NONE_MATCH)
        if action in ("update", "partial_update", "destroy"):
            params.append(IF_MATCH)
        if action and self.method in ("POST", "PUT", "PATCH", "DELETE"):
            params.append(REASON)
        return params

    def _get_request_body(self, direction="request"):
        action = self._portal_action()
        if action == "bulk_destroy":
            items = {"oneOf": [{"type": "integer"}, ID_ITEM]}
            return {"content": {JSON: {"schema": _array(items)}}, "required": True}
        body = super()._get_request_body(direction)
        if body is None or action not in ("create", "bulk_update", "bulk_partial_update"):
            return body
        one = body["content"][JSON]["schema"]
        if action == "create":
            if self.view.bulk_create:
                body["content"][JSON]["schema"] = {"oneOf": [one, _array(one)]}
            return body
        return {"content": {JSON: {"schema": _array({"allOf": [one, ID_ITEM]})}}, "required": True}

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        action = self._portal_action()
        if action in ("update", "partial_update", "destroy"):
            responses["412"] = {"description": "The object changed since the ETag in If-Match."}  # body: Error
        if action == "retrieve":
            responses["304"] = {"description": "Not modified: the ETag in If-None-Match is current."}
        if action == "create" and self.view.bulk_create:
            for media in responses.get("201", {}).get("content", {}).values():
                media["schema"] = {"oneOf": [media["schema"], _array(media["schema"])]}
        if action in ("bulk_update", "bulk_partial_update"):
            for media in responses.get("200", {}).get("content", {}).values():
                media["schema"] = _array(media["schema"])
        return responses
