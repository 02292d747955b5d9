from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import generic, views
from .sso import password
from .sso.views import LoginView, LogoutView

urlpatterns = [
    path("", views.HomeView.as_view(), name="home"),
    # Browsers ask for /favicon.ico where a page names no icon (the API's JSON answers, say).
    path("favicon.ico", views.favicon),
    path("search/", views.SearchView.as_view(), name="search"),
    path("changes/", views.ChangeLogView.as_view(), name="changelog"),
    path("tables/columns/", views.TableColumnsView.as_view(), name="table_columns"),
    path("tokens/", views.TokenListView.as_view(), name="tokens"),
    path("tokens/all/", views.AllTokensView.as_view(), name="tokens_all"),
    path("tokens/<int:pk>/revoke/", views.TokenRevokeView.as_view(), name="token_revoke"),
    path("imports/<int:pk>/", generic.ImportJobView.as_view(), name="import_job"),
    path("imports/<int:pk>/progress/", generic.ImportJobView.as_view(fragment=True), name="import_progress"),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/password_reset/", password.PasswordResetView.as_view(), name="password_reset"),
    path("accounts/password_reset/done/", password.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("accounts/reset/<uidb64>/<token>/", password.PasswordResetConfirmView.as_view(),
         name="password_reset_confirm"),
    path("accounts/reset/done/", password.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    # The rest of django.contrib.auth.urls (the login and password reset pages are the portal's own, above).
    path("accounts/logout/", LogoutView.as_view(), name="logout"),  # of the OpenID provider too
    path("accounts/password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password_change/done/", auth_views.PasswordChangeDoneView.as_view(),
         name="password_change_done"),
    path("sso/", include("portal.sso.urls")),
    path("admin/", admin.site.urls),
    path("inventory/", include("inventory.urls")),
    path("planning/", include("planning.urls")),
    path("support/", include("support.urls")),
    path("api/", include("portal.api.urls")),
]
