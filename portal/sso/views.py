"""The login page (with "Log in with …" where OpenID Connect is set up), the OpenID Connect login and its callback,
logging out (of the provider too), the directory group mapping's pages (admins only:
``portal.roles.ADMIN_ONLY_MODELS``) and its dry run."""

import logging
import time

from django.conf import settings
from django.contrib.auth import authenticate, login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.mixins import PermissionRequiredMixin
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render, resolve_url
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.http import url_has_allowed_host_and_scheme
from django.views import View
from django.views.generic import FormView

from ..generic import ObjectListView, ObjectView
from . import filters, oidc, tables
from .backends import local_logins
from .forms import DryRunForm, LoginForm
from .ldap import BACKEND as LDAP_BACKEND
from .mapping import apply, dry_run
from .models import DirectoryGroupMapping


class DirectoryGroupMappingListView(ObjectListView):
    queryset = DirectoryGroupMapping.objects.all()
    filterset_class = filters.DirectoryGroupMappingFilterSet
    table_class = tables.DirectoryGroupMappingTable
    template_name = "portal/sso_mapping_list.html"


class DirectoryGroupMappingView(ObjectView):
    queryset = DirectoryGroupMapping.objects.all()


class DryRunView(PermissionRequiredMixin, FormView):
    """"With this mapping, a user in these groups would get …": nothing written."""

    permission_required = "portal.view_directorygroupmapping"
    template_name = "portal/sso_dry_run.html"
    form_class = DryRunForm

    def get_form_kwargs(self):
        kwargs = super().get_form_kwargs()
        if "groups" in self.request.GET:  # a GET form: the answer has a URL to share
            kwargs["data"] = self.request.GET
        return kwargs

    def get(self, request, *args, **kwargs):
        form = self.get_form()
        grants = dry_run(form.cleaned_data["groups"], form.cleaned_data["source"]) if form.is_bound and \
            form.is_valid() else None
        return self.render_to_response(self.get_context_data(form=form, grants=grants))


class LoginView(auth_views.LoginView):
    authentication_form = LoginForm

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), **login_page_context()}


def login_page_context():
    """What the login page offers: "Log in with …" where OpenID Connect is set up; the password form where a
    password logs in (local accounts, LDAP), or where nothing else would."""
    found = oidc.config()
    passwords = local_logins() or LDAP_BACKEND in settings.AUTHENTICATION_BACKENDS
    return {"local_logins": local_logins(), "oidc_provider": found and found["provider_name"],
            "password_form": passwords or not found}


log = logging.getLogger(__name__)
ID_TOKEN = "oidc_id_token"  # the session's key: the ID token, the hint of RP-initiated logout
NEXT = "oidc_next"


def oidc_refused(request, message, status=403):
    """The login page again, saying why the provider's answer did not log in."""
    context = {"form": LoginForm(request), "sso_error": message, **login_page_context()}
    return render(request, "registration/login.html", context, status=status)


@method_decorator(login_not_required, name="dispatch")
class OIDCLoginView(View):
    """To the provider's login page (authorization code, PKCE, state and nonce kept in the session by Authlib)."""

    def get(self, request):
        if oidc.config() is None:
            raise Http404("OpenID Connect is not set up.")
        wanted = request.GET.get("next", "")
        safe = url_has_allowed_host_and_scheme(wanted, {request.get_host()}, request.is_secure())
        request.session[NEXT] = wanted if safe else ""
        try:
            app = oidc.client()
            return app.authorize_redirect(request, request.build_absolute_uri(reverse("portal:oidc_callback")))
        except oidc.errors() as error:
            log.warning("OpenID provider not reachable: %s", error)
            return oidc_refused(request, "The single sign-on provider could not be reached: try again later, or ask "
                                "an administrator. Local accounts still log in.", status=503)


@method_decorator(login_not_required, name="dispatch")
class OIDCCallbackView(View):
    """Back from the provider: the code exchanged (with the PKCE verifier), the ID token checked by Authlib
    (signature, issuer, audience, expiry, nonce), the user logged in, their groups mapped, the session made to end
    when the ID token does."""

    def get(self, request):
        if oidc.config() is None:
            raise Http404("OpenID Connect is not set up.")
        try:
            app = oidc.client()
            token = app.authorize_access_token(request, leeway=oidc.config()["clock_skew"])
            if "userinfo" not in token:
                raise oidc.ProviderError("no ID token in the provider's answer")
            found = oidc.claims(app, token)
        except oidc.errors() as error:
            log.warning("OpenID Connect login refused: %s: %s", type(error).__name__, error)
            return oidc_refused(request, "The single sign-on login was refused: the provider's answer could not be "
                                "verified. Try again, or ask an administrator.")
        user = authenticate(request, oidc_claims=found)
        if user is None:
            return oidc_refused(request, getattr(request, "oidc_refused", "This account may not log in."))
        wanted = request.session.pop(NEXT, "")
        apply(user, oidc.groups_of(found), "oidc")  # before the login: a failure here logs nobody in
        login(request, user)
        request.session[ID_TOKEN] = token["id_token"]
        left = int(found["exp"] - time.time())
        if settings.OIDC_SESSION_FROM_TOKEN and left < settings.SESSION_COOKIE_AGE:
            request.session.set_expiry(max(left, 1))
        return HttpResponseRedirect(wanted or resolve_url(settings.LOGIN_REDIRECT_URL))


class LogoutView(auth_views.LogoutView):
    """Django's logout; a session that came from the provider is then ended there too (RP-initiated logout:
    the provider's ``end_session_endpoint`` with the ID token as hint, back to the login page)."""

    def post(self, request, *args, **kwargs):
        id_token = request.session.get(ID_TOKEN)
        response = super().post(request, *args, **kwargs)
        found = oidc.config()
        if not (id_token and found and found["logout"]):
            return response
        try:
            back = request.build_absolute_uri(reverse("login"))
            url = oidc.client().create_logout_url(post_logout_redirect_uri=back, id_token_hint=id_token)["url"]
        except (*oidc.errors(), RuntimeError) as error:  # RuntimeError: the provider offers no end_session_endpoint
            log.warning("OpenID provider session not ended: %s", error)
            return response
        return HttpResponseRedirect(url)
