"""Date formats of the pages (``FORMAT_MODULE_PATH``): ISO dates everywhere, as the tables and the API show them."""
