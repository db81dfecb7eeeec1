"""The testbed: a Debian 12 storage server in a qemu guest, built from Debian's packages."""
