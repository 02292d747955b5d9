import functools
import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils import timezone


class PortalModel(models.Model):
    """Base of the apps' models that have pages: timestamps and the URLs the generic views use
    (``<app>:<model>_detail`` and so on)."""

    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True

    def get_absolute_url(self):
        return self._url("detail")

    def _url(self, action):
        if not isinstance(self.pk, int):
            opts = self._meta
            return reverse(f"{opts.app_label}:{opts.model_name}_{action}", args=[self.pk])
        return self.url_of(self.pk, action)

    @classmethod
    def url_of(cls, pk, action="detail"):
        """The ``action`` page of the object with id ``pk`` (None for no object), without the object: a table links
        a related object by its id (``linkify=lambda record: Site.url_of(record.site_id)``)."""
        if pk is None:
            return None
        prefix, suffix = cls.url_around_id(action)
        return f"{prefix}{pk}{suffix}"

    @classmethod
    def url_around_id(cls, action="detail"):
        """What comes before and after the id in the model's ``action`` URL: one reverse() per route, then
        string formatting (a list page links hundreds of rows)."""
        opts = cls._meta
        name = f"{opts.app_label}:{opts.model_name}_{action}"
        return _url_around_id(name, get_urlconf() or settings.ROOT_URLCONF, get_script_prefix())

    def get_edit_url(self):
        return self._url("edit")

    def get_delete_url(self):
        return self._url("delete")


URL_SENTINEL = 987654321  # an id no route needs; replaced by each object's id


@functools.lru_cache(maxsize=1024)
def _url_around_id(name, urlconf, script_prefix):
    """What comes before and after the id in the URL named ``name`` (for this urlconf and script prefix)."""
    prefix, _, suffix = reverse(name, urlconf=urlconf, args=[URL_SENTINEL]).partition(str(URL_SENTINEL))
    return prefix, suffix


def hash_token(key):
    return hashlib.sha256(key.encode()).hexdigest()


class APIToken(models.Model):
    """A named API token. Only a hash is stored; the key is shown once, when it is created."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'procurement sync'.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=8, editable=False, help_text="First characters, to recognise it.")
    created = models.DateTimeField(auto_now_add=True)
    expires = models.DateTimeField(null=True, blank=True)
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name = "API token"

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(cls, user, name, expires=None):
        """Create a token; returns (token, key). The key cannot be recovered later."""
        key = secrets.token_hex(20)
        token = cls.objects.create(user=user, name=name, key_hash=hash_token(key), prefix=key[:8], expires=expires)
        return token, key

    @property
    def is_expired(self):
        return self.expires is not None and self.expires <= timezone.now()


class WorkerHeartbeat(models.Model):
    """Written by a periodic Celery task so pages can say whether background work is running."""

    worker = models.CharField(max_length=200, unique=True)
    last_seen = models.DateTimeField()

    def __str__(self):
        return f"{self.worker} @ {self.last_seen:%Y-%m-%d %H:%M}"


class PageVisit(models.Model):
    """When a user last opened a list whose news the home page counts ("recommendations new since your last
    visit"): one row per user and page, moved on at each visit."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    page = models.CharField(max_length=50)
    at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "page"], name="page_visit_once_per_user")]

    def __str__(self):
        return f"{self.user} on {self.page} at {self.at:%Y-%m-%d %H:%M}"

    @classmethod
    def record(cls, user, page):
        """``user`` opens ``page`` now (nothing for an anonymous user)."""
        if user.is_authenticated:
            cls.objects.update_or_create(user=user, page=page, defaults={"at": timezone.now()})

    @classmethod
    def last(cls, user, page):
        """When ``user`` last opened ``page``; None if never."""
        return cls.objects.filter(user=user, page=page).values_list("at", flat=True).first()


class IdempotentRequest(models.Model):
    """The first answer to a write sent with an ``Idempotency-Key``: a repeat gets the same answer."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=500)
    body_hash = models.CharField(max_length=64)
    status = models.PositiveIntegerField()
    response = models.JSONField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_once_per_user")]

    def __str__(self):
        return f"{self.method} {self.path} [{self.key}]"


class ImportJob(models.Model):
    """A large CSV import (or its preview) run by a Celery task; its page polls ``done`` for the progress bar.

    A worker that dies mid-import (killed, out of memory, its machine lost) leaves the job checking or writing with
    no more progress: ``progressed`` says when it last moved. ``portal.tasks.resume_stalled_imports`` runs such a job
    again from the start (``attempts`` counts the runs); rows the dead run had written are matched on the import's
    natural key and updated, so none is written twice."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        CHECKING = "checking", "Checking rows"
        WRITING = "writing", "Writing rows"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    importer = models.CharField(max_length=200, help_text="Dotted path of the model's import view.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    text = models.TextField()
    commit = models.BooleanField(default=False, help_text="Import; otherwise only preview.")
    state = models.CharField(max_length=20, choices=State.choices, default=State.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    created_count = models.PositiveIntegerField(default=0)
    updated_count = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)
    warnings = models.JSONField(default=list, blank=True,
                                help_text="What the rows would do that is allowed but likely wrong (a site over its "
                                          "power): shown before the import is confirmed.")
    written = models.PositiveIntegerField(default=0, help_text="Rows committed so far (imports write in batches).")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Runs started; more than one after a worker died.")
    progressed = models.DateTimeField(default=timezone.now, help_text="When the job last moved (queued, a batch).")
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self):
        return f"import #{self.pk} ({self.get_state_display()})"

    @property
    def finished_ok(self):
        return self.state == self.State.DONE and not self.errors

    @property
    def percent(self):
        """Checking is the first half of the bar, writing (imports only) the second."""
        if self.state == self.State.DONE or not self.total:
            return 100 if self.state == self.State.DONE else 0
        share = min(self.done, self.total) / self.total
        if not self.commit:
            return round(100 * share)
        return round(50 * share + (50 if self.state == self.State.WRITING else 0))


class TablePreference(models.Model):
    """The columns one user shows in one list table (``portal.tables.ColumnChoice``), in order. ``columns`` is
    read leniently: names the table no longer has are skipped, a value that is not a list means the defaults."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="table_preferences")
    table = models.CharField(max_length=100)
    columns = models.JSONField(default=list)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "table"], name="one_table_preference_per_user")]

    def __str__(self):
        return f"{self.user} / {self.table}"


from .sso.models import DirectoryGroupMapping, LoginGrantChange  # noqa: E402, F401  (the app's models are found here)
