# Build Captioner for Windows: PyInstaller bundle, self-test, then the Inno Setup installer.
# Run from a checkout in PowerShell:  .\installer\build_windows.ps1
# Needs: Python >= 3.12 with the project installed (pip install -e ".[dev]" in .venv),
# and Inno Setup 6 (winget install JRSoftware.InnoSetup) for the setup .exe.
param(
    [string]$Python = ".venv\Scripts\python.exe",
    [string]$Dist = "dist",
    [switch]$NoInstaller
)
$ErrorActionPreference = "Stop"
$Root = Split-Path -Parent $PSScriptRoot
Set-Location $Root

$Version = & $Python -c "import captioner; print(captioner.__version__)"
if ($LASTEXITCODE -ne 0) { throw "cannot import captioner with $Python (install the project first)" }

$Started = Get-Date
& $Python -m PyInstaller --noconfirm --clean --distpath $Dist --workpath build\pyinstaller installer\captioner.spec
if ($LASTEXITCODE -ne 0) { throw "PyInstaller failed" }
$Bundle = Join-Path $Dist "captioner"
$Size = (Get-ChildItem $Bundle -Recurse | Measure-Object -Property Length -Sum).Sum / 1MB
Write-Host ("bundle: {0} ({1:N0} MB) in {2:N0} s" -f $Bundle, $Size, ((Get-Date) - $Started).TotalSeconds)

# The console twin of captioner.exe runs the self-test from outside the source tree.
Push-Location $env:TEMP
try {
    & (Join-Path $Root "$Bundle\captioner-cli.exe") --self-test
    if ($LASTEXITCODE -ne 0) { throw "the bundle's self-test failed" }
} finally { Pop-Location }

if ($NoInstaller) { return }
$Iscc = (Get-Command iscc.exe -ErrorAction SilentlyContinue).Source
if (-not $Iscc) {
    $Iscc = @("${env:ProgramFiles(x86)}\Inno Setup 6\ISCC.exe", "$env:ProgramFiles\Inno Setup 6\ISCC.exe",
              "$env:LOCALAPPDATA\Programs\Inno Setup 6\ISCC.exe") | Where-Object { Test-Path $_ } | Select-Object -First 1
}
if (-not $Iscc) { throw "Inno Setup 6 not found (winget install JRSoftware.InnoSetup), or pass -NoInstaller" }
$DistAbs = (Resolve-Path $Dist).Path
& $Iscc "/DAppVersion=$Version" "/DDistDir=$DistAbs" "/DOutputDir=$DistAbs" installer\windows\captioner.iss
if ($LASTEXITCODE -ne 0) { throw "Inno Setup failed" }
Write-Host "installer: $DistAbs\Captioner-$Version-windows-x64-setup.exe"
