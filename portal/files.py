"""Uploaded files: their type checked against their content (``sniff_content_type``), and kept as long as their
rows: deleting a document or attachment (itself, or with the contract or ticket it belongs to) removes its file
from storage once the deletion is committed."""

from pathlib import Path

from django import forms
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


SNIFF_BYTES = 4096


def sniff_content_type(upload, types):
    """The content type an upload's extension promises in ``types`` ({".pdf": (content type, (first bytes, ...))
    or None for text}), if its first bytes agree (never the browser's word); else a ValidationError. Text may hold
    no NUL byte: a binary does not hide under a text name."""
    extension = Path(upload.name).suffix.lower()
    if extension not in types:
        allowed = ", ".join(sorted(types))
        raise forms.ValidationError(f"Files of type '{extension or 'none'}' are not accepted; use one of {allowed}.")
    content_type, magic = types[extension]
    upload.seek(0)
    head = upload.read(SNIFF_BYTES)
    upload.seek(0)
    if magic and not head.startswith(magic):
        raise forms.ValidationError(f"The file is named {extension} but its content is not a {extension} file.")
    if magic is None and b"\x00" in head:
        raise forms.ValidationError(f"The file is named {extension} but is not text.")
    return content_type
