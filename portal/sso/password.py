"""Password reset for local accounts, in the portal's own pages, rate-limited, and never saying whether an address
has an account: every request gets the same "if an account has this address, a link is on its way" page.

Limits (``PASSWORD_RESET_LIMIT``, default 5 an hour): requests per client address, and mails per e-mail address,
counted in the cache (``CACHE_URL`` shares the count between processes). Past the client's limit the form answers
429 and says when to try again; past an address's, the page reads as always and no mail is sent (a flood of links
to one person's mailbox is what the limit stops). Accounts without a usable password (directory logins) get no link:
Django's form sends only to those."""

import hashlib
import logging

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.core.cache import cache
from django.http import Http404
from django.urls import reverse_lazy
from django.utils.decorators import method_decorator

from .backends import local_logins

log = logging.getLogger(__name__)
WINDOW = 3600  # seconds


def _spend(key, limit):
    """Count one more against ``key`` for the window; False when that goes past ``limit``."""
    cache.add(key, 0, WINDOW)
    try:
        used = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, WINDOW)
        used = 1
    return used <= limit


def _client(request):
    return request.META.get("REMOTE_ADDR", "")


class PasswordResetView(auth_views.PasswordResetView):
    template_name = "registration/portal_password_reset_form.html"
    email_template_name = "registration/portal_password_reset_email.txt"
    subject_template_name = "registration/portal_password_reset_subject.txt"
    success_url = reverse_lazy("password_reset_done")

    @method_decorator(login_not_required)
    def dispatch(self, request, *args, **kwargs):
        if not local_logins():
            raise Http404("The portal's own passwords are off (LOCAL_LOGINS=0): the directory resets passwords.")
        return super().dispatch(request, *args, **kwargs)

    def post(self, request, *args, **kwargs):
        limit = settings.PASSWORD_RESET_LIMIT
        if not _spend(f"password-reset:client:{_client(request)}", limit):
            form = self.get_form()
            form.add_error(None, "Too many password reset requests from here: try again in an hour.")
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        address = form.cleaned_data["email"].strip().casefold()
        digest = hashlib.sha256(address.encode()).hexdigest()  # no address in the cache's keys
        if not _spend(f"password-reset:address:{digest}", settings.PASSWORD_RESET_LIMIT):
            log.warning("Password reset: the hourly limit for one address was reached; no mail sent")
            return super(auth_views.PasswordResetView, self).form_valid(form)  # the same page, nothing sent
        self.extra_email_context = {"portal_url": settings.PORTAL_URL}  # the link on the portal's address
        return super().form_valid(form)


class PasswordResetDoneView(auth_views.PasswordResetDoneView):
    template_name = "registration/portal_password_reset_done.html"

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "timeout_hours": settings.PASSWORD_RESET_TIMEOUT // 3600}


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    template_name = "registration/portal_password_reset_confirm.html"


class PasswordResetCompleteView(auth_views.PasswordResetCompleteView):
    template_name = "registration/portal_password_reset_complete.html"
