//! The one seam to the outside world: the transport and a typed client per vendor.
