"""How the back-office writes dates and times: to the second, with the zone, in one unambiguous order
(Django's English default, "Nov. 23, 2026, 11:17 a.m.", hides the seconds that order an audit trail)."""

DATETIME_FORMAT = "Y-m-d H:i:s T"
DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATE_FORMAT = "Y-m-d"
