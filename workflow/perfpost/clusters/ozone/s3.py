"""Ozone's S3 gateway as perfpost reaches it: the key pair clients give it, and whether it
answers an S3 request (its readiness)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

# What clients give the S3 gateway. Without Kerberos, Ozone does not check an S3 request's
# signature: any key pair is accepted, and the access key is taken as the user's name. Both
# are secrets by their names (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), so perfpost masks
# every copy of them: neither may be a word its own text uses.
S3_ACCESS_KEY = "s3-perfpost-user"
S3_SECRET_KEY = "s3-perfpost-secret"
# The volume the gateway keeps S3 buckets in (ozone.s3g.volume.name's default).
S3_VOLUME = "s3v"
# SHA-256 of no bytes: a signed request's x-amz-content-sha256 for a request without a body.
EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def answers(endpoint: str) -> bool:
    """Whether the gateway at ``endpoint`` lists its buckets (an S3 ListBuckets, signed as a
    non-secure Ozone accepts), which needs its web server, its OM client and the OM."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    auth = (
        f"AWS4-HMAC-SHA256 Credential={S3_ACCESS_KEY}/{stamp[:8]}/us-east-1/s3/"
        "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + "0" * 64
    )
    headers = {"Authorization": auth, "x-amz-date": stamp, "x-amz-content-sha256": EMPTY}
    req = urllib.request.Request(endpoint + "/", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=3.0) as resp:
            return b"ListAllMyBucketsResult" in resp.read()
    except (OSError, urllib.error.URLError):
        return False
