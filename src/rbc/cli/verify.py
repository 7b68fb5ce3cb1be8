"""``rbc verify BUNDLE``: run the check catalogue (placeholder, replaced below)."""
