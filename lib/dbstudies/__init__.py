"""dbstudies — reproducible MySQL/MariaDB performance studies (driver library)."""
__version__ = "0.1.0"
