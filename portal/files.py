"""Uploaded files live as long as their rows: deleting a document or attachment (itself, or with the
contract or ticket it belongs to) removes its file from storage once the deletion is committed."""

from django.db import transaction
from django.db.models.signals import post_delete


def delete_file_with_row(model, field_name="file"):
    def remove(sender, instance, **kwargs):
        stored = getattr(instance, field_name)
        if stored and stored.name:
            storage, name = stored.storage, stored.name
            # After the commit: a rolled-back deletion keeps both the row and its file.
            transaction.on_commit(lambda: storage.delete(name))

    post_delete.connect(remove, sender=model, weak=False, dispatch_uid=f"delete-file-{model._meta.label}")
