# Shell helpers for commands run in the testbed guest (sourced from /mnt/ioaz). They touch the
# guest's block sysfs, which is the guest kernel's, not the host's.

# disk_by_serial I: the sdX name of the testbed's disk I (disks.py gives disk I serial IOAZ000I)
disk_by_serial() {
    udevadm settle
    basename "$(readlink -f "/dev/disk/by-id/ata-QEMU_HARDDISK_IOAZ$(printf %04d "$1")")"
}

# set_queue DEV QUEUE_DEPTH SCHEDULER: the drive's command queue and the kernel's scheduler
set_queue() {
    echo "$2" > "/sys/block/$1/device/queue_depth"
    echo "$3" > "/sys/block/$1/queue/scheduler"
}

# load_elevators: ioaz's fifo, vr and stream (built on the host for this kernel), bfq and kyber
load_elevators() {
    # said, not hidden: without the module a calibration's vr, sstf and stream fall back to
    # mq-deadline (calibrate then refuses them)
    [ -d /sys/module/ioaz_sched ] || insmod "/mnt/ioaz/kmod/build/$(uname -r)/ioaz_sched.ko" ||
        echo "load_elevators: ioaz_sched not loaded: no fifo, vr or stream here (make testbed builds it for $(uname -r))" >&2
    modprobe -q -a bfq kyber-iosched
}
