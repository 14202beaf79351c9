//! OTP-style supervision on top of `ractor` (work in progress).
