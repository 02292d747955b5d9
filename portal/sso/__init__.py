"""Single sign-on: logins from a directory (LDAP, ``ldap.py``) with its groups mapped to the portal's roles and to
teams by one table (``models.DirectoryGroupMapping``, applied at every login by ``mapping.apply``). Each way in is
off unless its environment variables are set; docs/authentication.md has the set-ups."""
