from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequiredMiddleware


class LoginRequiredMiddleware(DjangoLoginRequiredMiddleware):
    """Every page needs a login. The API answers 401/403 itself (token or session), so it is not
    redirected to the login page here; DRF's permission classes refuse anonymous requests there."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
