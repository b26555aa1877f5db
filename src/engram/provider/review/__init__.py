"""engram.provider.review: the subject's review page, server-rendered HTML at ``/review``.

The subject signs in with a bearer token that may ``confirm`` (or a one-time link from
``engram review-link``), sees each pending correction beside the belief it would change, confirms
or rejects it, and reads each belief's history. Sessions and links are stored hashed; every form
is CSRF-protected; pages load nothing from elsewhere and run no script. The contract is
``docs/spec/review-page.md``; :func:`review_routes` mounts the page in the provider app.
"""

from engram.provider.review._sessions import ReviewConfig, ReviewLink, create_review_link

__all__ = [
    "ReviewConfig",
    "ReviewLink",
    "create_review_link",
]
