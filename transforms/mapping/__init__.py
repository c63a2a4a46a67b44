"""Source-neutral mapping of a user: validation against the API's rules, OTP, roles, fields not carried."""
