from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination, PageNumberPagination

MAX_PAGE_SIZE = 1000


class PortalCursorPagination(CursorPagination):
    """Pages that stay stable while rows are added (telemetry rows, history) and cost the same at any
    depth: no ``count``, no ``OFFSET``. Ordered by the list's ``ordering`` (default: id)."""

    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE
    ordering = "pk"

    def decode_cursor(self, request):
        if not request.query_params.get(self.cursor_query_param):
            return None  # ``?cursor=`` asks for the first page
        try:
            return super().decode_cursor(request)
        except NotFound as error:  # DRF's answer to a damaged cursor; it is the request that is wrong
            message = "Invalid cursor: follow the next/previous links of an answer."
            raise ValidationError({self.cursor_query_param: [message]}) from error

    def get_ordering(self, request, queryset, view):
        ordering = super().get_ordering(request, queryset, view)
        # A foreign key orders by its id: the cursor keeps the id, not the related object.
        model_fields = {f.name: f for f in queryset.model._meta.concrete_fields}
        return tuple(self._attname(term, model_fields) for term in ordering)

    @staticmethod
    def _attname(term, model_fields):
        name = term.lstrip("-")
        field = model_fields.get(name)
        if field is not None and field.is_relation:
            return term.replace(name, field.attname)
        if "__" in name:
            raise ValidationError({"ordering": ["Cursor pages order by the object's own fields."]})
        return term


class PortalPagination(PageNumberPagination):
    """Page numbers (``?page=3``, with ``count``) by default; ``?cursor=`` switches a list to cursor pages
    (``next``/``previous`` links, no ``count``), for long lists read to the end."""

    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE
    cursor_query_param = "cursor"
    cursor_class = PortalCursorPagination

    def paginate_queryset(self, queryset, request, view=None):
        self.cursor = self.cursor_class() if self.cursor_query_param in request.query_params else None
        if self.cursor is not None:
            return self.cursor.paginate_queryset(queryset, request, view)
        return super().paginate_queryset(queryset, request, view)

    def get_paginated_response(self, data):
        if self.cursor is not None:
            return self.cursor.get_paginated_response(data)
        return super().get_paginated_response(data)

    def get_paginated_response_schema(self, schema):
        answer = super().get_paginated_response_schema(schema)
        answer["required"] = ["next", "previous", "results"]
        answer["properties"]["count"]["description"] = "Rows in the whole list (page numbers only)."
        return answer

    def get_schema_operation_parameters(self, view):
        cursor = {
            "name": self.cursor_query_param,
            "required": False,
            "in": "query",
            "description": "Cursor pagination: send it empty for the first page, then follow `next`. "
                           "Answers have no `count`.",
            "schema": {"type": "string"},
        }
        return [*super().get_schema_operation_parameters(view), cursor]
