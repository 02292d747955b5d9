"""The hardware catalog that ships with the portal: GPU and node models with their datasheet figures.

Plain data, so the data migrations (``0002_catalog``, ``0011_catalog_more_gpus``) and ``seed_demo`` can use it
without importing models. Figures are the vendors' published ones; compute is *dense* (NVIDIA and AMD print the
"with sparsity" number first, which is twice these). Bandwidths that need three decimals are rounded to
the two the model keeps (A100 40GB: 1.555 → 1.56 TB/s).

``nvlink_gbs`` is total bidirectional GPU-to-GPU bandwidth per GPU (NVLink, NVLink bridge, or AMD Infinity
Fabric: 7 links x 128 GB/s = 896 GB/s to the seven peers); 0 where GPUs talk only over PCIe.
"""

from decimal import Decimal as D

GPU_MODELS = [
    # NVIDIA A100 Tensor Core GPU datasheet (2021), "A100 40GB SXM" column: BF16 312 TFLOPS (624 sparse),
    # 1,555 GB/s HBM2, 400 W, NVLink 600 GB/s. Ampere has no FP8.
    {
        "vendor": "NVIDIA", "name": "A100 40GB SXM", "form_factor": "SXM", "memory_gb": 40,
        "memory_bandwidth_tbs": D("1.555"), "bf16_tflops": D("312.0"), "fp8_tflops": None,
        "tdp_w": 400, "nvlink_gbs": 600,
    },
    # Same datasheet, "A100 80GB SXM" column: 2,039 GB/s HBM2e, otherwise as the 40GB part.
    {
        "vendor": "NVIDIA", "name": "A100 80GB SXM", "form_factor": "SXM", "memory_gb": 80,
        "memory_bandwidth_tbs": D("2.039"), "bf16_tflops": D("312.0"), "fp8_tflops": None,
        "tdp_w": 400, "nvlink_gbs": 600,
    },
    # NVIDIA H100 Tensor Core GPU datasheet, "H100 SXM" column: BF16 1,979 / FP8 3,958 TFLOPS with sparsity
    # (NVIDIA H100 whitepaper: 989.4 / 1,978.9 dense), 3.35 TB/s HBM3, up to 700 W, NVLink 900 GB/s.
    {
        "vendor": "NVIDIA", "name": "H100 SXM 80GB", "form_factor": "SXM", "memory_gb": 80,
        "memory_bandwidth_tbs": D("3.35"), "bf16_tflops": D("989.4"), "fp8_tflops": D("1978.9"),
        "tdp_w": 700, "nvlink_gbs": 900,
    },
    # Same datasheet, "H100 PCIe" column: BF16 1,513 / FP8 3,026 TFLOPS with sparsity, 2 TB/s HBM2e,
    # 300-350 W, NVLink bridge 600 GB/s (pairs of cards).
    {
        "vendor": "NVIDIA", "name": "H100 PCIe 80GB", "form_factor": "PCIe", "memory_gb": 80,
        "memory_bandwidth_tbs": D("2.00"), "bf16_tflops": D("756.5"), "fp8_tflops": D("1513.0"),
        "tdp_w": 350, "nvlink_gbs": 600,
    },
    # Same datasheet, "H100 NVL" column (per GPU): 94 GB HBM3, 3.9 TB/s, BF16 1,671 / FP8 3,341 TFLOPS with
    # sparsity, 350-400 W, NVLink bridge 600 GB/s.
    {
        "vendor": "NVIDIA", "name": "H100 NVL 94GB", "form_factor": "PCIe", "memory_gb": 94,
        "memory_bandwidth_tbs": D("3.90"), "bf16_tflops": D("835.5"), "fp8_tflops": D("1670.5"),
        "tdp_w": 400, "nvlink_gbs": 600,
    },
    # NVIDIA H200 Tensor Core GPU datasheet, "H200 SXM" column: 141 GB HBM3e, 4.8 TB/s, BF16 1,979 /
    # FP8 3,958 TFLOPS with sparsity (same Hopper die as H100 SXM), up to 700 W, NVLink 900 GB/s.
    {
        "vendor": "NVIDIA", "name": "H200 SXM 141GB", "form_factor": "SXM", "memory_gb": 141,
        "memory_bandwidth_tbs": D("4.80"), "bf16_tflops": D("989.4"), "fp8_tflops": D("1978.9"),
        "tdp_w": 700, "nvlink_gbs": 900,
    },
    # NVIDIA HGX B200 / DGX B200 datasheets, per GPU: 180 GB HBM3e (1,440 GB per 8-GPU system; first announced
    # as 192 GB), 8 TB/s, FP8 72 PFLOPS and BF16 36 PFLOPS per 8 GPUs with sparsity → 4,500 / 2,250 dense,
    # 1,000 W, NVLink 5 1.8 TB/s.
    {
        "vendor": "NVIDIA", "name": "B200", "form_factor": "SXM", "memory_gb": 180,
        "memory_bandwidth_tbs": D("8.00"), "bf16_tflops": D("2250.0"), "fp8_tflops": D("4500.0"),
        "tdp_w": 1000, "nvlink_gbs": 1800,
    },
    # NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s, BF16 362.05 / FP8 733 TFLOPS dense (733 / 1,466 with
    # sparsity), 350 W, no NVLink.
    {
        "vendor": "NVIDIA", "name": "L40S", "form_factor": "PCIe", "memory_gb": 48,
        "memory_bandwidth_tbs": D("0.864"), "bf16_tflops": D("362.1"), "fp8_tflops": D("733.0"),
        "tdp_w": 350, "nvlink_gbs": 0,
    },
    # AMD Instinct MI300X data sheet: 192 GB HBM3, 5.3 TB/s, peak BF16 1,307.4 / FP8 2,614.9 TFLOPS (dense),
    # 750 W OAM, Infinity Fabric 7 links x 128 GB/s = 896 GB/s peer.
    {
        "vendor": "AMD", "name": "MI300X", "form_factor": "OAM", "memory_gb": 192,
        "memory_bandwidth_tbs": D("5.30"), "bf16_tflops": D("1307.4"), "fp8_tflops": D("2614.9"),
        "tdp_w": 750, "nvlink_gbs": 896,
    },
    # AMD Instinct MI325X data sheet: 256 GB HBM3E, 6 TB/s, same compute as MI300X (BF16 1,307.4 / FP8 2,614.9
    # dense), 1,000 W OAM, Infinity Fabric 896 GB/s peer.
    {
        "vendor": "AMD", "name": "MI325X", "form_factor": "OAM", "memory_gb": 256,
        "memory_bandwidth_tbs": D("6.00"), "bf16_tflops": D("1307.4"), "fp8_tflops": D("2614.9"),
        "tdp_w": 1000, "nvlink_gbs": 896,
    },
    # --- Added by migration 0011 (issue 18). Where a figure is uncertain the comment says so. ---
    # NVIDIA H800 SXM5 (the H100 SXM for the Chinese market, 2023): the H100 SXM's compute, memory and power
    # (BF16 989.4 / FP8 1,978.9 dense, 80 GB HBM3, 3.35 TB/s, 700 W); NVLink cut to 400 GB/s (also stated in the
    # DeepSeek-V3 report, arXiv:2412.19437, §3.1). NVIDIA's H800 product brief is not publicly archived: from memory.
    {
        "vendor": "NVIDIA", "name": "H800", "form_factor": "SXM", "memory_gb": 80,
        "memory_bandwidth_tbs": D("3.35"), "bf16_tflops": D("989.4"), "fp8_tflops": D("1978.9"),
        "tdp_w": 700, "nvlink_gbs": 400,
    },
    # NVIDIA A800 40GB Active / A800 SXM4 80GB datasheet: the A100 80GB SXM's figures (BF16 312 dense, 2,039 GB/s
    # HBM2e, 400 W) with NVLink cut to 400 GB/s. No FP8.
    {
        "vendor": "NVIDIA", "name": "A800 80GB SXM", "form_factor": "SXM", "memory_gb": 80,
        "memory_bandwidth_tbs": D("2.039"), "bf16_tflops": D("312.0"), "fp8_tflops": None,
        "tdp_w": 400, "nvlink_gbs": 400,
    },
    # NVIDIA V100 Tensor Core GPU datasheet, "V100 SXM2" column: 125 TFLOPS FP16 tensor (Volta has no BF16 and
    # no sparsity: this is the FP16 figure in the BF16 column), 900 GB/s HBM2, 300 W, NVLink 300 GB/s; 16 GB
    # and 32 GB parts otherwise equal.
    {
        "vendor": "NVIDIA", "name": "V100 SXM2 16GB", "form_factor": "SXM", "memory_gb": 16,
        "memory_bandwidth_tbs": D("0.900"), "bf16_tflops": D("125.0"), "fp8_tflops": None,
        "tdp_w": 300, "nvlink_gbs": 300,
    },
    {
        "vendor": "NVIDIA", "name": "V100 SXM2 32GB", "form_factor": "SXM", "memory_gb": 32,
        "memory_bandwidth_tbs": D("0.900"), "bf16_tflops": D("125.0"), "fp8_tflops": None,
        "tdp_w": 300, "nvlink_gbs": 300,
    },
    # NVIDIA GH200 Grace Hopper Superchip datasheet, HBM3e version: the Hopper GPU's BF16 1,979 / FP8 3,958 TFLOPS
    # with sparsity (989.4 / 1,978.9 dense), 144 GB HBM3e at 4.9 TB/s, NVLink 900 GB/s. The module's power is
    # configurable from 450 W to 1,000 W and includes the Grace CPU and its memory: 1,000 W here (the maximum).
    {
        "vendor": "NVIDIA", "name": "GH200 144GB", "form_factor": "Superchip", "memory_gb": 144,
        "memory_bandwidth_tbs": D("4.90"), "bf16_tflops": D("989.4"), "fp8_tflops": D("1978.9"),
        "tdp_w": 1000, "nvlink_gbs": 900,
    },
    # NVIDIA GB200 NVL72 datasheet, per GPU (the rack's figures / 72): BF16 360 / FP8 720 PFLOPS with sparsity →
    # 2,500 / 5,000 TFLOPS dense, 13.4 TB HBM3e → 186 GB, 576 TB/s → 8 TB/s, NVLink 5 1.8 TB/s. NVIDIA publishes
    # no per-GPU TDP for GB200; 1,200 W is the commonly reported figure (uncertain).
    {
        "vendor": "NVIDIA", "name": "GB200", "form_factor": "Superchip", "memory_gb": 186,
        "memory_bandwidth_tbs": D("8.00"), "bf16_tflops": D("2500.0"), "fp8_tflops": D("5000.0"),
        "tdp_w": 1200, "nvlink_gbs": 1800,
    },
    # NVIDIA HGX B300 (Blackwell Ultra) datasheet, per GPU: 288 GB HBM3e (2.3 TB per 8 GPUs), 8 TB/s, NVLink 5
    # 1.8 TB/s; dense BF16 and FP8 as B200 (2,250 / 4,500: Blackwell Ultra adds FP4, not BF16/FP8 throughput, as
    # NVIDIA's figures read; from memory). TDP: 1,100 W as reported for HGX B300 (uncertain: 1,100-1,400 W).
    {
        "vendor": "NVIDIA", "name": "B300", "form_factor": "SXM", "memory_gb": 288,
        "memory_bandwidth_tbs": D("8.00"), "bf16_tflops": D("2250.0"), "fp8_tflops": D("4500.0"),
        "tdp_w": 1100, "nvlink_gbs": 1800,
    },
    # AMD Instinct MI250X data sheet (OAM): 383 TFLOPS peak BF16/FP16 (CDNA 2 has no sparsity and no FP8),
    # 128 GB HBM2e, 3.2 TB/s, 560 W, 8 Infinity Fabric links up to 800 GB/s. One package holds two dies that
    # software sees as two GPUs of 64 GB each; the figures here are the package's.
    {
        "vendor": "AMD", "name": "MI250X", "form_factor": "OAM", "memory_gb": 128,
        "memory_bandwidth_tbs": D("3.20"), "bf16_tflops": D("383.0"), "fp8_tflops": None,
        "tdp_w": 560, "nvlink_gbs": 800,
    },
    # Intel Gaudi 3 AI accelerator white paper / HL-325L OAM: 1,835 TFLOPS BF16 and FP8 on the matrix engines
    # (dense; FP8 is not faster than BF16 on Gaudi 3), 128 GB HBM2e, 3.7 TB/s, 900 W; 24 × 200 GbE RoCE ports,
    # 21 of them to the 7 peers on an 8-card board: 21 × 25 GB/s × 2 directions = 1,050 GB/s (our reading).
    {
        "vendor": "Intel", "name": "Gaudi 3", "form_factor": "OAM", "memory_gb": 128,
        "memory_bandwidth_tbs": D("3.70"), "bf16_tflops": D("1835.0"), "fp8_tflops": D("1835.0"),
        "tdp_w": 900, "nvlink_gbs": 1050,
    },
    # NVIDIA L4 datasheet: 24 GB GDDR6, 300 GB/s, BF16 242 / FP8 485 TFLOPS with sparsity (121 / 242.5 dense),
    # 72 W, PCIe only.
    {
        "vendor": "NVIDIA", "name": "L4", "form_factor": "PCIe", "memory_gb": 24,
        "memory_bandwidth_tbs": D("0.300"), "bf16_tflops": D("121.0"), "fp8_tflops": D("242.0"),
        "tdp_w": 72, "nvlink_gbs": 0,
    },
    # NVIDIA RTX 6000 Ada Generation datasheet: 48 GB GDDR6 ECC, 960 GB/s, 1,457 TFLOPS FP8 tensor with
    # sparsity (728.5 dense; BF16 half of it, 364.2 dense, as the Ada architecture whitepaper's ratios: from
    # memory), 300 W, no NVLink.
    {
        "vendor": "NVIDIA", "name": "RTX 6000 Ada", "form_factor": "PCIe", "memory_gb": 48,
        "memory_bandwidth_tbs": D("0.960"), "bf16_tflops": D("364.2"), "fp8_tflops": D("728.5"),
        "tdp_w": 300, "nvlink_gbs": 0,
    },
]

NODE_MODELS = [
    # NVIDIA DGX A100 datasheet, 320 GB system: 8x A100 40GB, 2x AMD EPYC 7742 (2x 64 cores), 1 TB RAM,
    # 6.5 kW max, 6U.
    {
        "vendor": "NVIDIA", "name": "DGX A100 320GB", "cpu_cores": 128, "ram_gb": 1024, "gpu_slots": 8,
        "max_power_w": 6500, "height_u": 6,
    },
    # Same datasheet, 640 GB system: 8x A100 80GB, 2 TB RAM; otherwise as above.
    {
        "vendor": "NVIDIA", "name": "DGX A100 640GB", "cpu_cores": 128, "ram_gb": 2048, "gpu_slots": 8,
        "max_power_w": 6500, "height_u": 6,
    },
    # NVIDIA DGX H100 datasheet: 8x H100 SXM, 2x Xeon Platinum 8480C (2x 56 cores), 2 TB RAM, ~10.2 kW max,
    # 8U.
    {
        "vendor": "NVIDIA", "name": "DGX H100", "cpu_cores": 112, "ram_gb": 2048, "gpu_slots": 8,
        "max_power_w": 10200, "height_u": 8,
    },
    # NVIDIA DGX H200 datasheet: the DGX H100 chassis with 8x H200 SXM; 112 cores, 2 TB, ~10.2 kW, 8U.
    {
        "vendor": "NVIDIA", "name": "DGX H200", "cpu_cores": 112, "ram_gb": 2048, "gpu_slots": 8,
        "max_power_w": 10200, "height_u": 8,
    },
    # NVIDIA DGX B200 datasheet: 8x B200, 2x Xeon Platinum 8570 (2x 56 cores), 2 TB RAM (up to 4 TB),
    # ~14.3 kW max, 10U.
    {
        "vendor": "NVIDIA", "name": "DGX B200", "cpu_cores": 112, "ram_gb": 2048, "gpu_slots": 8,
        "max_power_w": 14300, "height_u": 10,
    },
    # Supermicro SYS-821GE-TNHR (HGX H100 8-GPU, 8U), as commonly configured: 2x Xeon Platinum 8480+
    # (2x 56 cores), 2 TB RAM. Max power is configuration-dependent; set like the DGX H100 it mirrors.
    {
        "vendor": "Supermicro", "name": "SYS-821GE-TNHR (HGX H100 8-GPU)", "cpu_cores": 112, "ram_gb": 2048,
        "gpu_slots": 8, "max_power_w": 10200, "height_u": 8,
    },
    # Dell PowerEdge R760xa spec sheet: 2U, up to 4 double-width PCIe GPUs (here L40S), 2x 4th-gen Xeon
    # (configured 2x 32 cores), 1 TB RAM, 2x 2800 W PSUs (1+1).
    {
        "vendor": "Dell", "name": "PowerEdge R760xa (4x L40S)", "cpu_cores": 64, "ram_gb": 1024, "gpu_slots": 4,
        "max_power_w": 2800, "height_u": 2,
    },
    # Dell PowerEdge XE9680 spec sheet, AMD Instinct MI300X configuration: 6U, 8x MI300X OAM, 2x Xeon
    # Platinum 8480+ (2x 56 cores), 2 TB RAM, 6x 2800 W PSUs (4+2 → 11.2 kW usable).
    {
        "vendor": "Dell", "name": "PowerEdge XE9680 (8x MI300X)", "cpu_cores": 112, "ram_gb": 2048, "gpu_slots": 8,
        "max_power_w": 11200, "height_u": 6,
    },
]

# Indicative prices of a node with its GPUs (USD), from launch announcements and press reports of street
# prices (DGX A100 launched at 199,000 USD in 2020; DGX B200 reported at about 515,000 USD in 2024). They
# only seed plans' node prices: a plan prices a node at the last order's unit price for the model first, and
# managers replace these with their quotes (the node model's list price, or the plan's node price).
NODE_LIST_PRICES = {
    "DGX A100 320GB": D("199000"),
    "DGX A100 640GB": D("249000"),
    "DGX H100": D("373000"),
    "DGX H200": D("430000"),
    "DGX B200": D("515000"),
    "SYS-821GE-TNHR (HGX H100 8-GPU)": D("310000"),
    "PowerEdge R760xa (4x L40S)": D("65000"),
    "PowerEdge XE9680 (8x MI300X)": D("300000"),
}
