"""Filters for the service's log handlers (settings.LOGGING)."""
import logging


class WithoutTraceback(logging.Filter):
    """A record's message without its traceback: for Django's security
    log, whose records (a foreign Host header, an oversized body) are a
    client's doing, answered 400, and logged with the stack that refused
    them - a screenful per request for anyone to cause."""

    def filter(self, record):
        record.exc_info = record.exc_text = record.stack_info = None
        return True
